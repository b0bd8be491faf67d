"""hierarchy"""
