"""benchkit.agent"""
