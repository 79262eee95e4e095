"""benchkit.scoring"""
