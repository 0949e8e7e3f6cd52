"""decode/jp2"""
