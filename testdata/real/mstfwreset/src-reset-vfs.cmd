["mstfwreset","-d","0000:3b:00.0","reset","-y","--level","3"]
