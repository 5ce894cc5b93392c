-- The Lua half of luafiber's `csv` module (see mod.rs): Tarantool
-- master's src/lua/csv.lua over the parser of parser.rs instead of
-- src/lib/csv through the FFI. Run once per Lua state by the module's
-- loader with the table of internal C functions; returns the module.
local internal = ...

local log = require('log')

local csv_new, csv_feed, csv_next, csv_escape = internal.new, internal.feed,
    internal.next, internal.escape

-- master's enum csv_iteraion_state
local CSV_IT_OK = 0
local CSV_IT_EOL = 1
local CSV_IT_NEEDMORE = 2
local CSV_IT_EOF = 3
local CSV_IT_ERROR = 4

local iter = function(csvstate, i)
    local readable = csvstate[1]
    local csv_chunk_size = csvstate[2]
    local it = csvstate[3]
    local tup = {}
    local st, field = csv_next(it)
    while st ~= CSV_IT_EOF do
        if st == CSV_IT_NEEDMORE then
            if readable then
                local buf = readable:read(csv_chunk_size)
                csv_feed(it, buf)
            else
                csv_feed(it, "")
            end
        elseif st == CSV_IT_EOL then
            i = i + 1
            if i > 0 then
                return i, tup
            end
        elseif st == CSV_IT_OK then
            if i >= 0 then
                tup[#tup + 1] = field
            end
        elseif st == CSV_IT_ERROR then
            log.warn("CSV file has errors")
            break
        end
        st, field = csv_next(it)
    end
end

local module = {}

--@brief parse csv string by string
--@param readable must be string or object with method read(num) returns string
--@param opts.chunk_size (default 4096). Parser will read by chunk_size symbols
--@param opts.delimiter (default ',').
--@param opts.quote_char (default '"').
--@param opts.skip_head_lines (default 0). Skip header.
--@return iter function, iterator state
module.iterate = function(readable, opts)
    opts = opts or {}
    if type(readable) ~= "string" and type(readable.read) ~= "function" then
        error("Usage: load(string or object with method read(num)" ..
              "returns string)")
    end
    if not opts.chunk_size then
        opts.chunk_size = 4096
    end
    if not opts.delimiter then
        opts.delimiter = ','
    end
    if not opts.quote_char then
        opts.quote_char = '"'
    end
    if not opts.skip_head_lines then
        opts.skip_head_lines = 0
    end
    local str
    if type(readable) == "string" then
        str = readable
        readable = nil
    else
        str = readable:read(opts.chunk_size)
    end

    if not str then --read not works
        error("Usage: load(string or object with method read(num)" ..
              "returns string)")
    end
    local it = csv_new(opts.delimiter, opts.quote_char)
    csv_feed(it, str)

    return iter, {readable, opts.chunk_size, it}, -opts.skip_head_lines
end

--@brief parse csv and make table
--@return table
module.load = function(readable, opts)
    opts = opts or {}
    local result = {}
    for i, tup in module.iterate(readable, opts) do
        result[i] = tup
    end
    return result
end

--@brief dumps tuple or table as csv
--@param t is tuple or table
--@param writable must be object with method write(string) like file or socket
--@param opts.delimiter (default ',').
--@param opts.quote_char (default '"').
--@return there is no writable it returns csv as string
module.dump = function(t, opts, writable)
    opts = opts or {}
    writable = writable or nil
    if not opts.delimiter then
        opts.delimiter = ','
    end
    if not opts.quote_char then
        opts.quote_char = '"'
    end

    if (type(writable) ~= "nil" and type(writable.write) ~= "function")
        or type(t) ~= "table" then
        error("Usage: dump(table[, opts, writable])")
    end
    local delimiter, quote_char = opts.delimiter, opts.quote_char
    if type(t[1]) ~= 'table' then
        t = {t}
    end
    local result_table
    if type(writable) == 'nil' then
        result_table = {}
    end
    for _, line in pairs(t) do
        local first = true
        local output_tuple = {}
        for _, field in pairs(line) do
            local strf = tostring(field)
            if first then
                first = false
            else
                output_tuple[#output_tuple + 1] = opts.delimiter
            end
            output_tuple[#output_tuple + 1] = csv_escape(strf, delimiter,
                                                         quote_char)
        end

        output_tuple[#output_tuple + 1] = '\n'
        if result_table then
            result_table[#result_table + 1] = table.concat(output_tuple)
        else
            writable:write(table.concat(output_tuple))
        end
    end
    if result_table then
        return table.concat(result_table)
    end
end

return module
