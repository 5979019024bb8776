"""asterism.mc"""
