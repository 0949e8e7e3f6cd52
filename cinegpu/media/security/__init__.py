"""Security: KDMs, certificates and signatures (ST 430-1/2/3, XML-DSig), content keys, essence encryption (ST 429-6)."""
