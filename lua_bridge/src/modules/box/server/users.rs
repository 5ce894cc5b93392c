//! Users, roles, functions and grants, with no Lua (Tarantool's `_user`,
//! `_priv` and `_func` with `src/box/user.cc`'s access checks): what the
//! server checks before any code of a request runs, and what
//! `box.schema.user`/`role`/`func` change.
//!
//! Passwords are kept as Tarantool keeps them: `sha1(sha1(password))`
//! (chap-sha1's `hash2`), never in clear.
//!
//! Built in, as in a fresh Tarantool: `guest` (id 0, the empty password
//! as its `_user` tuple has it, role `public`), `admin` (id 1, no password, every privilege: only the
//! console reaches it), the roles `public` (2), `replication` (3) and
//! `super` (31, every privilege on the universe).

use std::collections::HashMap;

use luafiber_iproto::auth;

/// Privilege bits (`enum priv_type` of `user_def.h`).
pub(crate) mod priv_bits {
    /// `execute`.
    pub const EXECUTE: u32 = 4;
    /// `session`.
    pub const SESSION: u32 = 8;
    /// `usage`.
    pub const USAGE: u32 = 16;
    /// Every privilege.
    pub const ALL: u32 = u32::MAX;
}

/// `guest`'s id.
pub(crate) const GUEST: u32 = 0;
/// `admin`'s id.
pub(crate) const ADMIN: u32 = 1;
/// The role `public`.
pub(crate) const PUBLIC: u32 = 2;
/// The role `super`.
pub(crate) const SUPER: u32 = 31;
/// The first id given to a new user or role (Tarantool's `BOX_SYSTEM_USER_ID_MAX` + 1).
const FIRST_ID: u32 = 32;

/// The privilege names, in `priv_name` order, with their bits.
pub(crate) const PRIV_NAMES: [(&str, u32); 13] = [
    ("read", 1),
    ("write", 2),
    ("execute", 4),
    ("session", 8),
    ("usage", 16),
    ("create", 32),
    ("drop", 64),
    ("alter", 128),
    ("reference", 256),
    ("trigger", 512),
    ("insert", 1024),
    ("update", 2048),
    ("delete", 4096),
];

/// A user or a role.
#[derive(Clone, Debug)]
pub(crate) struct User {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// A role (cannot log in) rather than a user.
    pub is_role: bool,
    /// `sha1(sha1(password))`, when it has a password.
    pub hash2: Option<[u8; 20]>,
}

/// What a grant is on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Object {
    /// The whole instance.
    Universe,
    /// A function of `box.schema.func`, by name.
    Function(String),
}

/// Why a change of the schema failed: an error code and its message.
pub(crate) type SchemaError = (u32, String);

/// The users, roles, functions and grants of one cord.
#[derive(Debug)]
pub(crate) struct Users {
    users: Vec<User>,
    next_id: u32,
    /// Functions of `box.schema.func`: name to `setuid`.
    funcs: HashMap<String, bool>,
    /// Privileges granted: (grantee, object) to bits.
    privs: HashMap<(u32, Object), u32>,
    /// Roles granted: grantee to role ids.
    roles: HashMap<u32, Vec<u32>>,
}

impl Default for Users {
    fn default() -> Users {
        let user = |id, name: &str, is_role| User {
            id,
            name: name.into(),
            is_role,
            hash2: None,
        };
        let mut u = Users {
            users: vec![
                // Tarantool's guest keeps the empty password's hash
                // (`vhvewKp0tNyweZQ+cFKAlsyphfg=`): an AUTH as guest with
                // the empty password succeeds.
                User {
                    hash2: Some(auth::password_hash2(b"")),
                    ..user(GUEST, "guest", false)
                },
                user(ADMIN, "admin", false),
                user(PUBLIC, "public", true),
                user(3, "replication", true),
                user(SUPER, "super", true),
            ],
            next_id: FIRST_ID,
            funcs: HashMap::new(),
            privs: HashMap::new(),
            roles: HashMap::new(),
        };
        u.privs.insert((ADMIN, Object::Universe), priv_bits::ALL);
        u.privs.insert((SUPER, Object::Universe), priv_bits::ALL);
        u.privs.insert(
            (GUEST, Object::Universe),
            priv_bits::SESSION | priv_bits::USAGE,
        );
        u.roles.insert(GUEST, vec![PUBLIC]);
        u
    }
}

/// `ER_NO_SUCH_USER`.
fn no_such_user(name: &str) -> SchemaError {
    (45, format!("User '{name}' is not found"))
}

impl Users {
    /// The user or role named `name`.
    pub fn find(&self, name: &[u8]) -> Option<&User> {
        self.users.iter().find(|u| u.name.as_bytes() == name)
    }

    /// The user or role with id `id`.
    pub fn by_id(&self, id: u32) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }

    /// The name of user `id` (`"?"` for one dropped meanwhile).
    pub fn name_of(&self, id: u32) -> &str {
        self.by_id(id).map_or("?", |u| u.name.as_str())
    }

    /// Creates a user (`is_role` false) or a role with `password`'s hash.
    ///
    /// # Errors
    ///
    /// `ER_USER_EXISTS`/`ER_ROLE_EXISTS` when the name is taken.
    pub fn create(
        &mut self,
        name: &str,
        is_role: bool,
        password: Option<&[u8]>,
    ) -> Result<u32, SchemaError> {
        if let Some(u) = self.find(name.as_bytes()) {
            return Err(if u.is_role || is_role {
                (83, format!("Role '{name}' already exists"))
            } else {
                (46, format!("User '{name}' already exists"))
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.users.push(User {
            id,
            name: name.into(),
            is_role,
            hash2: password.map(auth::password_hash2),
        });
        if !is_role {
            // What `box.schema.user.create` grants a new user.
            self.privs.insert(
                (id, Object::Universe),
                priv_bits::SESSION | priv_bits::USAGE,
            );
            self.roles.insert(id, vec![PUBLIC]);
        }
        Ok(id)
    }

    /// Sets user `name`'s password.
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`.
    pub fn passwd(&mut self, name: &str, password: &[u8]) -> Result<(), SchemaError> {
        let u = self
            .users
            .iter_mut()
            .find(|u| u.name == name && !u.is_role)
            .ok_or_else(|| no_such_user(name))?;
        u.hash2 = Some(auth::password_hash2(password));
        Ok(())
    }

    /// Drops a user or a role and every grant to and of it.
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`/`ER_NO_SUCH_ROLE`; `ER_DROP_USER` for the built-in
    /// ones.
    pub fn drop_user(&mut self, name: &str, is_role: bool) -> Result<(), SchemaError> {
        let Some(pos) = self
            .users
            .iter()
            .position(|u| u.name == name && u.is_role == is_role)
        else {
            return Err(if is_role {
                (82, format!("Role '{name}' is not found"))
            } else {
                no_such_user(name)
            });
        };
        let id = self.users[pos].id;
        if id < FIRST_ID {
            return Err((
                44,
                format!("Failed to drop user or role '{name}': the user or the role is a system"),
            ));
        }
        self.users.remove(pos);
        self.privs.retain(|(g, _), _| *g != id);
        self.roles.remove(&id);
        for rs in self.roles.values_mut() {
            rs.retain(|r| *r != id);
        }
        Ok(())
    }

    /// Registers function `name` (`box.schema.func.create`).
    ///
    /// # Errors
    ///
    /// `ER_FUNCTION_EXISTS`.
    pub fn func_create(&mut self, name: &str, setuid: bool) -> Result<(), SchemaError> {
        if self.funcs.contains_key(name) {
            return Err((52, format!("Function '{name}' already exists")));
        }
        self.funcs.insert(name.into(), setuid);
        Ok(())
    }

    /// Drops function `name` and the grants on it.
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_FUNCTION`.
    pub fn func_drop(&mut self, name: &str) -> Result<(), SchemaError> {
        if self.funcs.remove(name).is_none() {
            return Err((51, format!("Function '{name}' does not exist")));
        }
        self.privs
            .retain(|(_, o), _| *o != Object::Function(name.into()));
        Ok(())
    }

    /// Whether function `name` is registered.
    pub fn func_exists(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// Checks that `object` exists.
    fn check_object(&self, object: &Object) -> Result<(), SchemaError> {
        match object {
            Object::Function(f) if !self.funcs.contains_key(f) => {
                Err((51, format!("Function '{f}' does not exist")))
            }
            _ => Ok(()),
        }
    }

    fn grantee(&self, name: &str) -> Result<u32, SchemaError> {
        self.find(name.as_bytes())
            .map(|u| u.id)
            .ok_or_else(|| no_such_user(name))
    }

    /// Grants `bits` on `object` to `grantee`; returns the bits it did not
    /// have before (0: it had them all, which the caller may report).
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`, `ER_NO_SUCH_FUNCTION`.
    pub fn grant(&mut self, grantee: &str, bits: u32, object: Object) -> Result<u32, SchemaError> {
        let id = self.grantee(grantee)?;
        self.check_object(&object)?;
        let have = self.privs.entry((id, object)).or_insert(0);
        let new = bits & !*have;
        *have |= bits;
        Ok(new)
    }

    /// Revokes `bits` on `object` from `grantee`; returns the bits it had
    /// of them (0: none, which the caller may report).
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`, `ER_NO_SUCH_FUNCTION`.
    pub fn revoke(&mut self, grantee: &str, bits: u32, object: Object) -> Result<u32, SchemaError> {
        let id = self.grantee(grantee)?;
        self.check_object(&object)?;
        let key = (id, object);
        let had = self.privs.get(&key).copied().unwrap_or(0) & bits;
        if let Some(have) = self.privs.get_mut(&key) {
            *have &= !bits;
            if *have == 0 {
                self.privs.remove(&key);
            }
        }
        Ok(had)
    }

    /// Grants role `role` to `grantee`; false when it had it.
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`, `ER_NO_SUCH_ROLE`, `ER_ROLE_LOOP`.
    pub fn grant_role(&mut self, grantee: &str, role: &str) -> Result<bool, SchemaError> {
        let id = self.grantee(grantee)?;
        let rid = self.role_id(role)?;
        if rid == id || self.has_role(rid, id) {
            return Err((
                87,
                format!("Granting role '{role}' to role '{grantee}' would create a loop"),
            ));
        }
        let rs = self.roles.entry(id).or_default();
        if rs.contains(&rid) {
            return Ok(false);
        }
        rs.push(rid);
        Ok(true)
    }

    /// Revokes role `role` from `grantee`; false when it did not have it.
    ///
    /// # Errors
    ///
    /// `ER_NO_SUCH_USER`, `ER_NO_SUCH_ROLE`.
    pub fn revoke_role(&mut self, grantee: &str, role: &str) -> Result<bool, SchemaError> {
        let id = self.grantee(grantee)?;
        let rid = self.role_id(role)?;
        let rs = self.roles.entry(id).or_default();
        let had = rs.contains(&rid);
        rs.retain(|r| *r != rid);
        Ok(had)
    }

    fn role_id(&self, role: &str) -> Result<u32, SchemaError> {
        self.find(role.as_bytes())
            .filter(|u| u.is_role)
            .map(|u| u.id)
            .ok_or_else(|| (82, format!("Role '{role}' is not found")))
    }

    /// Whether `id` has role `role`, directly or through its roles.
    fn has_role(&self, id: u32, role: u32) -> bool {
        let mut seen = Vec::new();
        let mut todo = vec![id];
        while let Some(u) = todo.pop() {
            if seen.contains(&u) {
                continue;
            }
            seen.push(u);
            for &r in self.roles.get(&u).map_or(&[][..], Vec::as_slice) {
                if r == role {
                    return true;
                }
                todo.push(r);
            }
        }
        false
    }

    /// The privileges `id` has on `object`, its own and its roles'.
    pub fn effective(&self, id: u32, object: &Object) -> u32 {
        let mut bits = 0;
        let mut seen = Vec::new();
        let mut todo = vec![id];
        while let Some(u) = todo.pop() {
            if seen.contains(&u) {
                continue;
            }
            seen.push(u);
            // `(u, object)` without cloning the name per lookup would need
            // a borrowed key; grants are few and checks per request use
            // the universe first.
            bits |= self.privs.get(&(u, object.clone())).copied().unwrap_or(0);
            if let Some(rs) = self.roles.get(&u) {
                todo.extend_from_slice(rs);
            }
        }
        bits
    }

    /// Whether user `id` may CALL function `name` (execute on the
    /// universe, or on that function of `box.schema.func`); `universe`
    /// is its [`effective`](Users::effective) privileges on the universe.
    pub fn may_call(&self, id: u32, universe: u32, name: &[u8]) -> bool {
        if universe & priv_bits::EXECUTE != 0 {
            return true;
        }
        let Ok(name) = std::str::from_utf8(name) else {
            return false;
        };
        self.funcs.contains_key(name)
            && self.effective(id, &Object::Function(name.into())) & priv_bits::EXECUTE != 0
    }

    /// Whether privileges `universe` on the universe allow EVAL (execute).
    pub fn may_eval(universe: u32) -> bool {
        universe & priv_bits::EXECUTE != 0
    }

    /// Checks an AUTH: the user's id when `scramble` (`None`: the request
    /// had no tuple) proves its password under `salt`.
    ///
    /// # Errors
    ///
    /// `ER_CREDS_MISMATCH` alike for an unknown user, a role, a user
    /// without a password and a wrong one (`guest`'s is the empty one) (master's answer, which does not
    /// tell which).
    pub fn authenticate(
        &self,
        name: &[u8],
        scramble: Option<&[u8]>,
        salt: &[u8],
    ) -> Result<u32, SchemaError> {
        let bad = || {
            (
                47,
                "User not found or supplied credentials are invalid".to_string(),
            )
        };
        let user = self.find(name).filter(|u| !u.is_role).ok_or_else(bad)?;
        match (scramble, &user.hash2) {
            (None, _) if user.id == GUEST => Ok(GUEST),
            (Some(s), Some(h)) if auth::check_scramble(s, salt, h) => Ok(user.id),
            _ => Err(bad()),
        }
    }

    /// The privileges granted to `name` as `(bits, object)` pairs, for
    /// `box.schema.user.info`.
    pub fn grants_of(&self, id: u32) -> Vec<(u32, Object)> {
        let mut v: Vec<_> = self
            .privs
            .iter()
            .filter(|((g, _), _)| *g == id)
            .map(|((_, o), b)| (*b, o.clone()))
            .collect();
        v.sort_by(|a, b| format!("{:?}", a.1).cmp(&format!("{:?}", b.1)));
        v
    }

    /// The roles granted to `id`.
    pub fn roles_of(&self, id: u32) -> Vec<u32> {
        self.roles.get(&id).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_may_not_call_until_granted() {
        let mut u = Users::default();
        let univ = |u: &Users| u.effective(GUEST, &Object::Universe);
        assert!(!u.may_call(GUEST, univ(&u), b"f"));
        assert!(!Users::may_eval(univ(&u)));
        u.func_create("f", false).unwrap();
        assert!(!u.may_call(GUEST, univ(&u), b"f"));
        u.grant("guest", priv_bits::EXECUTE, Object::Function("f".into()))
            .unwrap();
        assert!(u.may_call(GUEST, univ(&u), b"f"));
        assert!(!u.may_call(GUEST, univ(&u), b"g"));
        u.grant("guest", priv_bits::EXECUTE, Object::Universe)
            .unwrap();
        assert!(u.may_call(GUEST, univ(&u), b"g") && Users::may_eval(univ(&u)));
    }

    #[test]
    fn super_role_gives_everything() {
        let mut u = Users::default();
        let id = u.create("bob", false, Some(b"pw")).unwrap();
        let univ = |u: &Users| u.effective(id, &Object::Universe);
        assert!(!Users::may_eval(univ(&u)));
        assert!(u.grant_role("bob", "super").unwrap());
        assert!(Users::may_eval(univ(&u)) && u.may_call(id, univ(&u), b"anything"));
        assert!(u.revoke_role("bob", "super").unwrap());
        assert!(!Users::may_eval(univ(&u)));
    }

    #[test]
    fn authentication_does_not_tell_why() {
        let mut u = Users::default();
        u.create("bob", false, Some(b"pw")).unwrap();
        let salt = [5u8; 32];
        let good = auth::scramble(&salt, b"pw");
        let bad = auth::scramble(&salt, b"nope");
        assert!(u.authenticate(b"bob", Some(&good), &salt).is_ok());
        let e1 = u.authenticate(b"bob", Some(&bad), &salt).unwrap_err();
        let e2 = u.authenticate(b"nobody", Some(&good), &salt).unwrap_err();
        let e3 = u.authenticate(b"admin", Some(&good), &salt).unwrap_err();
        assert_eq!(e1, e2);
        assert_eq!((e1.0, e3.0), (47, 47));
        assert_eq!(u.authenticate(b"guest", None, &salt), Ok(GUEST));
        let empty = auth::scramble(&salt, b"");
        assert_eq!(u.authenticate(b"guest", Some(&empty), &salt), Ok(GUEST));
        assert_eq!(
            u.authenticate(b"guest", Some(&bad), &salt).unwrap_err().0,
            47
        );
        assert_eq!(
            u.authenticate(b"admin", Some(&empty), &salt).unwrap_err().0,
            47
        );
        u.passwd("bob", b"new").unwrap();
        assert!(u.authenticate(b"bob", Some(&good), &salt).is_err());
    }

    #[test]
    fn role_loops_are_refused() {
        let mut u = Users::default();
        u.create("r1", true, None).unwrap();
        u.create("r2", true, None).unwrap();
        u.grant_role("r1", "r2").unwrap();
        assert_eq!(u.grant_role("r2", "r1").unwrap_err().0, 87);
    }
}
