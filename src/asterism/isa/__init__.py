"""asterism.isa"""
