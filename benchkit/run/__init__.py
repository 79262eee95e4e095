"""benchkit.run"""
