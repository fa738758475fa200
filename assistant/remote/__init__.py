"""Papers from where researchers keep them: public scholarly services (by identifier or by a
search) and Zotero libraries, written as files the corpus readers already read."""
