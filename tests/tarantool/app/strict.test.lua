strict = require('strict')
strict.on()
if a then a = true end
strict.off()
if a then a = true end
