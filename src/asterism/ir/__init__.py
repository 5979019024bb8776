"""asterism.ir"""
