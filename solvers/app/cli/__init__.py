"""app.cli"""
