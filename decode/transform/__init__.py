"""decode/transform"""
