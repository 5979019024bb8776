"""asterism.runtime"""
