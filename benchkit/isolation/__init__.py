"""benchkit.isolation"""
