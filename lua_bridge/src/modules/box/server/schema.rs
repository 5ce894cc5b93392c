//! `box.schema.user`, `role` and `func` as `box.internal`'s C functions
//! (master's `src/box/lua/schema.lua` over `_user`, `_priv`, `_func`): users
//! and roles with their passwords (double SHA-1), grants of `execute`
//! (on `universe` or a function) and of roles, functions by name. The
//! rights live in [`Users`] in the cord's server state; `box.lua` gives the
//! Lua face and its argument checks.

use super::*;

lua_fn! {
    /// `box.internal.user_create(name, password, is_role)`.
    pub(super) fn user_create(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.user.create")?;
        let pw = s.to_str(2).map(<[u8]>::to_vec);
        let is_role = s.to_bool(3);
        let r = ServerState::with(|st| st.users_mut().create(&name, is_role, pw.as_deref()));
        r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.user_passwd(name, password)`.
    pub(super) fn user_passwd(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.user.passwd")?;
        let pw = s.to_str(2).map(<[u8]>::to_vec).unwrap_or_default();
        let r = ServerState::with(|st| st.users_mut().passwd(&name, &pw));
        r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.user_drop(name, is_role)`.
    pub(super) fn user_drop(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.user.drop")?;
        let is_role = s.to_bool(2);
        let r = ServerState::with(|st| st.users_mut().drop_user(&name, is_role));
        r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.user_exists(name, is_role)`: whether a user (or a
    /// role) of that name exists.
    pub(super) fn user_exists(s: &mut Stack) {
        let name = s.to_str(1).map(<[u8]>::to_vec).unwrap_or_default();
        let is_role = s.to_bool(2);
        let found = ServerState::with(|st| {
            st.users.borrow().find(&name).is_some_and(|u| u.is_role == is_role)
        });
        s.push_bool(found);
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.user_info(name)`: `{{privileges, type, name}, ...}`
    /// as `box.schema.user.info` gives it.
    pub(super) fn user_info(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.user.info")?;
        let info = ServerState::with(|st| {
            let u = st.users.borrow();
            let user = u.find(name.as_bytes())?;
            let mut rows: Vec<(String, String, String)> = u
                .grants_of(user.id)
                .into_iter()
                .map(|(bits, o)| {
                    let privs: Vec<&str> = users::PRIV_NAMES
                        .iter()
                        .filter(|(_, b)| bits & b != 0)
                        .map(|(n, _)| *n)
                        .collect();
                    let (t, n) = match o {
                        Object::Universe => ("universe".to_string(), String::new()),
                        Object::Function(f) => ("function".to_string(), f),
                    };
                    (privs.join(","), t, n)
                })
                .collect();
            for r in u.roles_of(user.id) {
                rows.push(("execute".into(), "role".into(), u.name_of(r).into()));
            }
            Some(rows)
        });
        let Some(rows) = info else {
            return Err(raise_coded(s, 45, &format!("User '{name}' is not found")));
        };
        s.ensure(8)?;
        let t = s.new_table(rows.len() as i32, 0);
        for (i, (p, ty, n)) in rows.iter().enumerate() {
            let row = s.new_table(3, 0);
            s.push_str(p);
            s.rawseti(row, 1);
            s.push_str(ty);
            s.rawseti(row, 2);
            s.push_str(n);
            s.rawseti(row, 3);
            s.rawseti(t, i as i64 + 1);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.priv_grant(grantee, bits, object_type, object_name,
    /// revoke)`: grants (or revokes) the privilege bits on `universe` or
    /// a `function`; returns the bits that changed.
    pub(super) fn priv_grant(s: &mut Stack) {
        let grantee = str_arg(s, 1, "box.schema.user.grant")?;
        let bits = s.to_integer(2).unwrap_or(0) as u32;
        let ty = str_arg(s, 3, "box.schema.user.grant")?;
        let object = match ty.as_str() {
            "universe" => Object::Universe,
            "function" => Object::Function(str_arg(s, 4, "box.schema.user.grant")?),
            "space" | "sequence" => {
                let n = s.to_str(4).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
                let (code, what) = if ty == "space" { (36, "Space") } else { (49, "Sequence") };
                return Err(raise_coded(s, code, &format!("{what} '{n}' does not exist")));
            }
            other => {
                return Err(raise_coded(s, 1, &format!("Unknown object type '{other}'")));
            }
        };
        let revoke = s.to_bool(5);
        let r = ServerState::with(|st| {
            let mut u = st.users_mut();
            if revoke {
                u.revoke(&grantee, bits, object)
            } else {
                u.grant(&grantee, bits, object)
            }
        });
        let changed = r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        s.push_int(i64::from(changed));
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.role_grant(grantee, role, revoke)`: grants (or
    /// revokes) a role; returns whether that changed anything.
    pub(super) fn role_grant(s: &mut Stack) {
        let grantee = str_arg(s, 1, "box.schema.user.grant")?;
        let role = str_arg(s, 2, "box.schema.user.grant")?;
        let revoke = s.to_bool(3);
        let r = ServerState::with(|st| {
            let mut u = st.users_mut();
            if revoke {
                u.revoke_role(&grantee, &role)
            } else {
                u.grant_role(&grantee, &role)
            }
        });
        let changed = r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        s.push_bool(changed);
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.func_create(name, setuid)`.
    pub(super) fn func_create(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.func.create")?;
        let setuid = s.to_bool(2);
        let r = ServerState::with(|st| st.users_mut().func_create(&name, setuid));
        r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.func_drop(name)`.
    pub(super) fn func_drop(s: &mut Stack) {
        let name = str_arg(s, 1, "box.schema.func.drop")?;
        let r = ServerState::with(|st| st.users_mut().func_drop(&name));
        r.map_err(|(c, m)| raise_coded(s, c, &m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.func_exists(name)`.
    pub(super) fn func_exists(s: &mut Stack) {
        let name = s.to_str(1).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        let found = ServerState::with(|st| st.users.borrow().func_exists(&name));
        s.push_bool(found);
        Ok(1)
    }
}
