"""benchkit.report"""
