"""decode/tier2"""
