"""decode/codestream"""
