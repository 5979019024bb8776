"""asterism.profile"""
