"""benchkit.gitea"""
