["mstfwreset","-d","0000:3b:00.0","query"]
