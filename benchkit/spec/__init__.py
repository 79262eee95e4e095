"""benchkit.spec"""
