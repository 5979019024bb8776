"""asterism.passes"""
