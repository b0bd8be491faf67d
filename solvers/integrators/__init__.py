"""integrators"""
