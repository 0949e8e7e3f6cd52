"""decode/tier1"""
