-- The `box` table (Tarantool's src/box/lua/*.lua, without storage).
-- Called with `box.internal` (the C functions of the Rust parts); returns
-- the table that becomes the global `box`.
local internal = ...

local box = {
    internal = internal,
    -- Spaces need storage, which luafiber has none of.
    space = {},
}

-- server (h-server): box.session, box.schema.user/role/func ----------------
do
    local function check_name(fname, name)
        if type(name) ~= 'string' then
            error(('Usage: %s(name%s)'):format(fname,
                  fname:find('create') and ', opts' or ''), 3)
        end
    end

    -- master's utils.check_param_table (src/lua/utils.lua)
    local function check_param_table(opts, template)
        if opts == nil then
            return
        end
        if type(opts) ~= 'table' then
            internal.raise_coded(1, 'options should be a table')
        end
        for k, v in pairs(opts) do
            if template[k] == nil then
                internal.raise_coded(1, "unexpected option '" ..
                                        tostring(k) .. "'")
            elseif type(v) ~= template[k] then
                internal.raise_coded(1, "options parameter '" ..
                                        k .. "' should be of type " .. template[k])
            end
        end
    end

    -- master's identifier_check (src/box/identifier.c): not empty, no
    -- control characters
    local function check_identifier(name)
        if name == '' or name:find('%c') then
            internal.raise_coded(70, ("Invalid identifier '%s' (expected printable " ..
                                     "symbols only or it is too long)"):format(name))
        end
    end

    box.session = {
        id = internal.session_id,
        uid = internal.session_uid,
        euid = internal.session_uid,
        user = internal.session_user,
        peer = internal.session_peer,
        sync = internal.session_sync,
        type = internal.session_type,
        push = function(...)
            local ok, err = internal.session_push(...)
            if ok == nil then
                -- master's luaT_push_nil_and_error: the diag is set too
                box.error.set(err)
            end
            return ok, err
        end,
    }
    function box.session.exists(id)
        return id == internal.session_id()
    end
    -- master's session.lua: effective_user is the user (no setuid here).
    box.session.effective_user = internal.session_user

    -- Session triggers (Tarantool's trigger API: f adds, (nil, old)
    -- removes, (new, old) replaces, () lists; the newest runs first).
    local triggers = {connect = {}, disconnect = {}, auth = {}}

    -- box.session.storage (master's session.lua): a table per session, made
    -- on first use, dropped when the session ends (after its on_disconnect
    -- triggers, as master's session_storage_cleanup). Once a storage was
    -- made the server runs the disconnect hook for every session.
    local aggregate_storage = {}
    local storage_used = false
    local function count_triggers(kind)
        local n = #triggers[kind]
        if kind == 'disconnect' and storage_used then
            n = n + 1
        end
        internal.session_trigger_count(kind, n)
    end
    setmetatable(box.session, {
        __index = function(_, key)
            if key ~= 'storage' then
                return
            end
            local sid = internal.session_id()
            local storage = aggregate_storage[sid]
            if storage == nil then
                storage = {}
                aggregate_storage[sid] = storage
                if not storage_used then
                    storage_used = true
                    count_triggers('disconnect')
                end
            end
            return storage
        end,
        aggregate_storage = aggregate_storage,
    })
    local function trigger_api(kind)
        local list = triggers[kind]
        return function(new, old)
            if new == nil and old == nil then
                local copy = {}
                for i = #list, 1, -1 do copy[#copy + 1] = list[i] end
                return copy
            end
            if (new ~= nil and type(new) ~= 'function') or
               (old ~= nil and type(old) ~= 'function') then
                error('trigger reset: incorrect arguments', 2)
            end
            if old ~= nil then
                local found = false
                for i = 1, #list do
                    if list[i] == old then
                        if new ~= nil then list[i] = new else table.remove(list, i) end
                        found = true
                        break
                    end
                end
                if not found then
                    error('trigger reset: Trigger is not found', 2)
                end
            else
                list[#list + 1] = new
            end
            count_triggers(kind)
            -- master's lbox_trigger_reset: nothing when one was deleted
            if new == nil then
                return
            end
            return new
        end
    end
    box.session.on_connect = trigger_api('connect')
    box.session.on_disconnect = trigger_api('disconnect')
    box.session.on_auth = trigger_api('auth')
    -- What the server runs, in the session, on a connect, a disconnect
    -- and an AUTH (`user`, `success`); an error of an on_connect trigger
    -- closes the connection.
    local function run_triggers(list, ...)
        for i = #list, 1, -1 do
            list[i](...)
        end
    end
    function internal.session_triggers(kind, ...)
        if kind ~= 'disconnect' then
            return run_triggers(triggers[kind], ...)
        end
        local sid = internal.session_id()
        local ok, err = pcall(run_triggers, triggers[kind], ...)
        aggregate_storage[sid] = nil
        if not ok then
            error(err, 0)
        end
    end

    -- Privilege names to bits (src/box/user_def.h).
    local PRIVS = {
        read = 1, write = 2, execute = 4, session = 8, usage = 16,
        create = 32, drop = 64, alter = 128, reference = 256,
        trigger = 512, insert = 1024, update = 2048, delete = 4096,
        all = 0xFFFFFFFF,
    }
    local function priv_bits(privilege)
        if type(privilege) ~= 'string' then
            error('privilege must be a string', 3)
        end
        local bits = 0
        for p in privilege:gmatch('[^,%s]+') do
            local b = PRIVS[p:lower()]
            if b == nil then
                error(("Unsupported universe privilege '%s'"):format(p), 3)
            end
            if b == 0xFFFFFFFF then
                bits = b
            elseif bits % (2 * b) < b then
                bits = bits + b
            end
        end
        return bits
    end

    local function object_repr(object_type, object_name)
        if object_type == 'universe' then
            return 'universe'
        end
        return ("%s '%s'"):format(object_type, object_name)
    end

    -- grant(user, privileges, object_type, object_name, opts) or
    -- grant(user, role, nil, nil, opts): Tarantool's schema.lua grant.
    local function grant(name, privilege, object_type, object_name, opts, revoke)
        if type(object_type) == 'table' then
            opts, object_type = object_type, nil
        end
        if type(object_name) == 'table' then
            opts, object_name = object_name, nil
        end
        opts = opts or {}
        if object_type == nil and object_name == nil then
            -- A role.
            local changed = internal.role_grant(name, privilege, revoke)
            if not changed and not (revoke and opts.if_exists)
               and not (not revoke and opts.if_not_exists) then
                local msg = revoke
                    and ("User '%s' does not have role '%s'"):format(name, privilege)
                    or ("User '%s' already has role '%s'"):format(name, privilege)
                internal.raise_coded(revoke and 92 or 90, msg)
            end
            return
        end
        if object_type == 'role' then
            return grant(name, object_name, nil, nil, opts, revoke)
        end
        if object_type ~= 'universe' and object_name == nil then
            error(("Usage: box.schema.user.%s(user, privilege, object_type, object_name)")
                  :format(revoke and 'revoke' or 'grant'), 3)
        end
        object_name = object_name or ''
        local bits = priv_bits(privilege)
        local changed = internal.priv_grant(name, bits, object_type,
                                            object_name, revoke)
        if changed == 0 then
            if revoke and not opts.if_exists then
                internal.raise_coded(91, ("User '%s' does not have %s access on %s '%s'")
                    :format(name, privilege, object_type, object_name))
            elseif not revoke and not opts.if_not_exists then
                internal.raise_coded(89, ("User '%s' already has %s access on %s")
                    :format(name, privilege, object_repr(object_type, object_name)))
            end
        end
    end

    local function make(is_role)
        local kind = is_role and 'role' or 'user'
        local t = {}
        function t.create(name, opts)
            check_name('box.schema.' .. kind .. '.create', name)
            check_param_table(opts, is_role and
                {if_not_exists = 'boolean', _origin = 'string'} or
                {password = 'string', if_not_exists = 'boolean', _origin = 'string'})
            opts = opts or {}
            if opts.if_not_exists and internal.user_exists(name, is_role) then
                return
            end
            check_identifier(name)
            internal.user_create(name, not is_role and opts.password or nil, is_role)
        end
        function t.drop(name, opts)
            check_name('box.schema.' .. kind .. '.drop', name)
            check_param_table(opts, {if_exists = 'boolean', _origin = 'string'})
            opts = opts or {}
            if opts.if_exists and not internal.user_exists(name, is_role) then
                return
            end
            internal.user_drop(name, is_role)
        end
        function t.exists(name)
            return internal.user_exists(name, is_role)
        end
        function t.grant(name, ...)
            return grant(name, ...)
        end
        function t.revoke(name, privilege, object_type, object_name, opts)
            return grant(name, privilege, object_type, object_name, opts, true)
        end
        function t.info(name)
            return internal.user_info(name or internal.session_user())
        end
        return t
    end

    box.schema = box.schema or {}
    box.schema.user = make(false)
    box.schema.role = make(true)
    function box.schema.user.passwd(name, password)
        if password == nil then
            name, password = internal.session_user(), name
        end
        if type(password) ~= 'string' then
            error('Usage: box.schema.user.passwd([user,] password)', 2)
        end
        if name == 'guest' and password ~= '' then
            -- master's user_def_fill_auth_data (alter.cc)
            internal.raise_coded(96, 'Setting password for guest user has no effect')
        end
        internal.user_passwd(name, password)
    end
    function box.schema.user.password(password)
        -- The hash Tarantool's _user keeps: base64(sha1(sha1(password))).
        return internal.password_hash(password)
    end

    box.schema.func = {}
    function box.schema.func.create(name, opts)
        check_name('box.schema.func.create', name)
        opts = opts or {}
        if opts.if_not_exists and internal.func_exists(name) then
            return
        end
        internal.func_create(name, opts.setuid)
    end
    function box.schema.func.drop(name, opts)
        check_name('box.schema.func.drop', name)
        opts = opts or {}
        if opts.if_exists and not internal.func_exists(name) then
            return
        end
        internal.func_drop(name)
    end
    function box.schema.func.exists(name)
        return internal.func_exists(name)
    end
end
-- end of server (h-server) ---------------------------------------------------

return box
