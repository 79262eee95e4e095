"""benchkit.forge"""
