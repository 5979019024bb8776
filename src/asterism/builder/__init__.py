"""asterism.builder"""
