"""asterism.emu"""
