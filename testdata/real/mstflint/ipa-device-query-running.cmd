["mstflint","-d","0000:03:00.0","-qq","query"]
