net = require('net.box')

--
-- gh-3856: wait_connected = false is ignored.
--
do                                                                  \
    local c = net.connect('8.8.8.8:1234', {wait_connected = false}) \
    local res = c.state                                             \
    c:close()                                                       \
    return res                                                      \
end
