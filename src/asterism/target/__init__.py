"""asterism.target"""
