//! The payload field names of Tarantool's error codes (master's
//! `src/box/errcode.h`, the names after each row's message): `box.error(code,
//! ...)` stores its arguments under them (`box.error.new(box.error.NO_SUCH_USER,
//! 'bob').user == 'bob'`), and their count tells where the level argument is.
//! A code not listed has none. Generated once from that header; add a row by
//! hand when master adds one.

/// `(code, field names)`, sorted by code; an empty name takes a place but
/// stores nothing (as `ILLEGAL_PARAMS`'s).
pub(super) static ERRFIELDS: &[(u32, &[&str])] = &[
    (1, &[""]),                                                    // ILLEGAL_PARAMS
    (3, &["index", "space", "", "", "old_tuple", "new_tuple"]),    // TUPLE_FOUND
    (5, &["", ""]),                                                // UNSUPPORTED
    (8, &["details"]),                                             // INJECTION
    (9, &["space", "details"]),                                    // CREATE_SPACE
    (10, &["space"]),                                              // SPACE_EXISTS
    (11, &["space", "details"]),                                   // DROP_SPACE
    (12, &["space", "details"]),                                   // ALTER_SPACE
    (13, &["index", "space"]),                                     // INDEX_TYPE
    (14, &["index", "space", "details"]),                          // MODIFY_INDEX
    (15, &["space"]),                                              // LAST_DROP
    (16, &["max"]),                                                // TUPLE_FORMAT_LIMIT
    (17, &["space"]),                                              // DROP_PRIMARY_KEY
    (18, &["partno", "expected"]),                                 // KEY_PART_TYPE
    (19, &["expected", "actual"]),                                 // EXACT_MATCH
    (20, &["details"]),                                            // INVALID_MSGPACK
    (23, &["field", "expected", "actual"]),                        // FIELD_TYPE
    (24, &["field", "actual", "expected"]),                        // INDEX_PART_TYPE_MISMATCH
    (25, &["field", "details"]),                                   // UPDATE_SPLICE
    (26, &["operation", "field", "expected"]),                     // UPDATE_ARG_TYPE
    (27, &["field", "actual", "expected"]),                        // FORMAT_MISMATCH_INDEX_PART
    (28, &["argno", "operation"]),                                 // UNKNOWN_UPDATE_OP
    (29, &["field", "details"]),                                   // UPDATE_FIELD
    (31, &["max", "value"]),                                       // KEY_PART_COUNT
    (32, &["details"]),                                            // PROC_LUA
    (33, &["func"]),                                               // NO_SUCH_PROC
    (34, &["trigger"]),                                            // NO_SUCH_TRIGGER
    (35, &["index_id", "space"]),                                  // NO_SUCH_INDEX_ID
    (36, &["space"]),                                              // NO_SUCH_SPACE
    (37, &["fieldno"]),                                            // NO_SUCH_FIELD_NO
    (38, &["actual", "expected"]),                                 // EXACT_FIELD_COUNT
    (39, &["field"]),                                              // FIELD_MISSING
    (43, &["user", "details"]),                                    // CREATE_USER
    (44, &["user", "details"]),                                    // DROP_USER
    (45, &["user"]),                                               // NO_SUCH_USER
    (46, &["user"]),                                               // USER_EXISTS
    (48, &["value"]),                                              // UNKNOWN_REQUEST_TYPE
    (49, &["value"]),                                              // UNKNOWN_SCHEMA_OBJECT
    (50, &["func", "details"]),                                    // CREATE_FUNCTION
    (51, &["func"]),                                               // NO_SUCH_FUNCTION
    (52, &["func"]),                                               // FUNCTION_EXISTS
    (54, &["operation"]),                                          // MULTISTATEMENT_TRANSACTION
    (55, &["trigger"]),                                            // TRIGGER_EXISTS
    (56, &["max"]),                                                // USER_MAX
    (57, &["engine"]),                                             // NO_SUCH_ENGINE
    (58, &["option"]),                                             // RELOAD_CFG
    (59, &["option", "details"]),                                  // CFG
    (62, &["replica", "replicaset"]),                              // UNKNOWN_REPLICA
    (63, &["expected", "actual"]),                                 // REPLICASET_UUID_MISMATCH
    (64, &["value"]),                                              // INVALID_UUID
    (66, &["expected", "actual"]),                                 // INSTANCE_UUID_MISMATCH
    (67, &["value"]),                                              // REPLICA_ID_IS_RESERVED
    (69, &["value"]),                                              // MISSING_REQUEST_FIELD
    (70, &["value"]),                                              // IDENTIFIER
    (71, &["func_id", "details"]),                                 // DROP_FUNCTION
    (72, &["value"]),                                              // ITERATOR_TYPE
    (73, &["max"]),                                                // REPLICA_MAX
    (82, &["role"]),                                               // NO_SUCH_ROLE
    (83, &["role"]),                                               // ROLE_EXISTS
    (84, &["role", "details"]),                                    // CREATE_ROLE
    (85, &["index"]),                                              // INDEX_EXISTS
    (87, &["role", "grantee"]),                                    // ROLE_LOOP
    (88, &["details"]),                                            // GRANT
    (89, &["user", "privilege", "", "object_type", "object"]),     // PRIV_GRANTED
    (90, &["user", "role"]),                                       // ROLE_GRANTED
    (91, &["user", "privilege", "object_type", "object"]),         // PRIV_NOT_GRANTED
    (92, &["user", "role"]),                                       // ROLE_NOT_GRANTED
    (94, &["space", "space_id", "old_tuple", "new_tuple", "ops"]), // CANT_UPDATE_PRIMARY_KEY
    (95, &["operation", "field"]),                                 // UPDATE_INTEGER_OVERFLOW
    (98, &["object_type", "privilege"]),                           // UNSUPPORTED_PRIV
    (99, &["func", "details"]),                                    // LOAD_FUNCTION
    (100, &["value", "func"]),                                     // FUNCTION_LANGUAGE
    (101, &["", "", ""]),                                          // RTREE_RECT
    (104, &["details"]),                                           // PROTOCOL
    (106, &["actual", "expected"]),                                // WRONG_INDEX_RECORD
    (107, &["partno", "details"]),                                 // WRONG_INDEX_PARTS
    (108, &["details"]),                                           // WRONG_INDEX_OPTIONS
    (109, &["actual", "expected"]),                                // WRONG_SCHEMA_VERSION
    (110, &["value", "max"]),                                      // MEMTX_MAX_TUPLE_SIZE
    (111, &["details"]),                                           // WRONG_SPACE_OPTIONS
    (112, &["index", "index_type", "space", "engine", "feature"]), // UNSUPPORTED_INDEX_FEATURE
    (113, &["space"]),                                             // VIEW_IS_RO
    (119, &["details"]),                                           // COMPRESSION
    (124, &["details"]),                                           // DECOMPRESSION
    (125, &["expected", "actual"]),                                // INVALID_XLOG_TYPE
    (126, &["path"]),                                              // ALREADY_RUNNING
    (127, &["max"]),                                               // INDEX_FIELD_COUNT_LIMIT
    (128, &["instance_id"]),                                       // LOCAL_INSTANCE_ID_IS_READ_ONLY
    (131, &["path", "details"]),                                   // INVALID_INDEX_FILE
    (132, &["details"]),                                           // INVALID_RUN_FILE
    (133, &["details"]),                                           // INVALID_VYLOG_FILE
    (136, &["index_type", "expected", "actual"]),                  // PARTIAL_KEY
    (137, &["space"]),                                             // TRUNCATE_SYSTEM_SPACE
    (138, &["module", "details"]),                                 // LOAD_MODULE
    (139, &["value", "max"]),                                      // VINYL_MAX_TUPLE_SIZE
    (141, &["fieldno", "details"]),                                // WRONG_SPACE_FORMAT
    (142, &["sequence", "details"]),                               // CREATE_SEQUENCE
    (143, &["sequence", "details"]),                               // ALTER_SEQUENCE
    (144, &["sequence", "details"]),                               // DROP_SEQUENCE
    (145, &["sequence"]),                                          // NO_SUCH_SEQUENCE
    (146, &["sequence"]),                                          // SEQUENCE_EXISTS
    (147, &["sequence"]),                                          // SEQUENCE_OVERFLOW
    (148, &["index", "space"]),                                    // NO_SUCH_INDEX_NAME
    (149, &["field"]),                                             // SPACE_FIELD_IS_DUPLICATE
    (150, &["details"]),                                           // CANT_CREATE_COLLATION
    (151, &["details"]),                                           // WRONG_COLLATION_OPTIONS
    (152, &["space"]),                                             // NULLABLE_PRIMARY
    (153, &["field", "space"]),                                    // NO_SUCH_FIELD_NAME_IN_SPACE
    (155, &["replication_group"]),                                 // NO_SUCH_GROUP
    (157, &["value_type", "parameter"]),                           // SQL_BIND_TYPE
    (158, &["max"]),                                               // SQL_BIND_PARAMETER_MAX
    (159, &["details"]),                                           // SQL_EXECUTE
    (160, &["operation", "field"]),                                // UPDATE_DECIMAL_OVERFLOW
    (161, &["parameter"]),                                         // SQL_BIND_NOT_FOUND
    (162, &["field", "expected", "actual"]),                       // ACTION_MISMATCH
    (165, &["module"]),                                            // NO_SUCH_MODULE
    (166, &["collation"]),                                         // NO_SUCH_COLLATION
    (167, &["constraint", "details"]),                             // CREATE_FK_CONSTRAINT
    (169, &["constraint", "space"]),                               // NO_SUCH_CONSTRAINT
    (170, &["constraint_type", "constraint", "space"]),            // CONSTRAINT_EXISTS
    (171, &["actual", "expected"]),                                // SQL_TYPE_MISMATCH
    (173, &["collation", "details"]),                              // DROP_COLLATION
    (175, &["pragma"]),                                            // SQL_NO_SUCH_PRAGMA
    (176, &["field"]),                                             // SQL_CANT_RESOLVE_FIELD
    (177, &["index", "space"]),                                    // INDEX_EXISTS_IN_SPACE
    (178, &["expected", "actual"]),                                // INCONSISTENT_TYPES
    (179, &["line", "position", "details"]),                       // SQL_SYNTAX_WITH_POS
    (183, &["line", "position", "keyword", ""]),                   // SQL_KEYWORD_IS_RESERVED
    (184, &["line", "token"]),                                     // SQL_SYNTAX_NEAR_TOKEN
    (185, &["line", "position", "value"]),                         // SQL_UNKNOWN_TOKEN
    (186, &["details"]),                                           // SQL_PARSER_GENERIC
    (188, &["space", "value", "max"]),                             // SQL_COLUMN_COUNT_MAX
    (189, &["value"]),                                             // HEX_LITERAL_MAX
    (190, &["literal"]),                                           // INT_LITERAL_MAX
    (191, &["parameter", "value", "max"]),                         // SQL_PARSER_LIMIT
    (192, &["feature"]),                                           // INDEX_DEF_UNSUPPORTED
    (194, &["field"]),                                             // MULTIKEY_INDEX_MISMATCH
    (195, &["constraint", "details"]),                             // CREATE_CK_CONSTRAINT
    (197, &["actual", "expected"]),                                // SQL_COLUMN_COUNT
    (198, &["index", "space", "details"]),                         // FUNC_INDEX_FUNC
    (199, &["index", "space", "details"]),                         // FUNC_INDEX_FORMAT
    (200, &["details"]),                                           // FUNC_INDEX_PARTS
    (201, &["field"]),                                             // NO_SUCH_FIELD_NAME
    (202, &["func", "", "value", "min", "max"]),                   // FUNC_WRONG_ARG_COUNT
    (204, &["func", "actual"]),                                    // SQL_FUNC_WRONG_RET_COUNT
    (205, &["func", "expected", "actual"]),                        // FUNC_INVALID_RETURN_TYPE
    (206, &["line", "position", "details"]),                       // SQL_PARSER_GENERIC_WITH_POS
    (207, &["replica"]),                                           // REPLICA_NOT_ANON
    (209, &["setting", "expected"]),                               // SESSION_SETTING_INVALID_VALUE
    (210, &["details"]),                                           // SQL_PREPARE
    (211, &["value"]),                                             // WRONG_QUERY_ID
    (212, &["sequence"]),                                          // SEQUENCE_NOT_STARTED
    (213, &["setting"]),                                           // NO_SUCH_SESSION_SETTING
    (214, &["instance_id"]),                                       // UNCOMMITTED_FOREIGN_SYNC_TXNS
    (218, &["value"]),                                             // TUPLE_METADATA_IS_TOO_BIG
    (220, &["replica"]),                                           // TOO_EARLY_SUBSCRIBE
    (221, &["space"]),                                             // SQL_CANT_ADD_AUTOINC
    (222, &["value", "details"]),                                  // QUORUM_WAIT
    (223, &["replica_id"]),                                        // INTERFERING_PROMOTE
    (226, &["leader_id"]),                                         // NOT_LEADER
    (228, &["instance_id"]),                                       // SYNC_QUEUE_FOREIGN
    (229, &["request"]),                                           // UNABLE_TO_PROCESS_IN_STREAM
    (230, &["request"]),                        // UNABLE_TO_PROCESS_OUT_OF_STREAM
    (234, &["constraint", "space", "details"]), // CREATE_CONSTRAINT
    (235, &["constraint", "field", "field_id"]), // FIELD_CONSTRAINT_FAILED
    (236, &["constraint"]),                     // TUPLE_CONSTRAINT_FAILED
    (237, &["constraint", "space", "details"]), // CREATE_FOREIGN_KEY
    (238, &["constraint", "details"]),          // FOREIGN_KEY_INTEGRITY
    (239, &["constraint", "field", "details", "field_id"]), // FIELD_FOREIGN_KEY_FAILED
    (240, &["constraint", "details"]),          // COMPLEX_FOREIGN_KEY_FAILED
    (241, &["details"]),                        // WRONG_SPACE_UPGRADE_OPTIONS
    (242, &["actual", "value"]),                // NO_ELECTION_QUORUM
    (244, &["details"]),                        // SPLIT_BRAIN
    (245, &["old_term", "new_term"]),           // OLD_TERM
    (248, &["field", "expected", "actual"]),    // DEFAULT_VALUE_TYPE
    (249, &["value"]),                          // UNKNOWN_AUTH_METHOD
    (250, &["auth_method", "details"]),         // INVALID_AUTH_DATA
    (251, &["auth_method", "details"]),         // INVALID_AUTH_REQUEST
    (252, &["details"]),                        // WEAK_PASSWORD
    (253, &["history_length"]),                 // OLD_PASSWORD
    (254, &["session_id"]),                     // NO_SUCH_SESSION
    (255, &["session_type"]),                   // WRONG_SESSION_TYPE
    (259, &["space"]),                          // SQL_SEQ_SCAN
    (260, &["value"]),                          // NO_SUCH_EVENT
    (261, &["replica", "leader"]),              // BOOTSTRAP_NOT_UNANIMOUS
    (262, &["replica"]),                        // CANT_CHECK_BOOTSTRAP_LEADER
    (267, &["actual", "expected"]),             // CLUSTER_NAME_MISMATCH
    (268, &["actual", "expected"]),             // REPLICASET_NAME_MISMATCH
    (269, &["value", "replica"]),               // INSTANCE_NAME_DUPLICATE
    (270, &["actual", "expected"]),             // INSTANCE_NAME_MISMATCH
    (
        271,
        &["schema_version", "feature_name", "tarantool_version"],
    ), // SCHEMA_NEEDS_UPGRADE
    (273, &["feature"]),                        // DEPRECATED
    (275, &["func", "details"]),                // CREATE_DEFAULT_FUNC
    (276, &["func", "details"]),                // DEFAULT_FUNC_FAILED
    (277, &["value"]),                          // INVALID_DEC
    (280, &["field", "field_type", "", "value", "min", "max"]), // FIELD_VALUE_OUT_OF_RANGE
    (288, &["value"]),                          // INVALID_VCLOCK
    (290, &["partno", "field_type", "value", "min", "max"]), // KEY_PART_VALUE_OUT_OF_RANGE
    (291, &["uuid", "details"]),                // REPLICA_GC
    (292, &["engine"]),                         // ALIEN_ENGINE
    (293, &["engine_without_mvcc", "engine_with_mvcc"]), // MVCC_UNAVAILABLE
    (
        294,
        &["space", "space_id", "index", "old_tuple", "new_tuple"],
    ), // CANT_UPGRADE_INDEXED_FIELD
    (296, &["field", "value"]),                 // FIELD_IRREPRESENTABLE_VALUE
    (297, &["partno", "value"]),                // KEY_PART_IRREPRESENTABLE_VALUE
    (298, &["path", "details"]),                // INVALID_SORTDATA_FILE
    (299, &["thread_id"]),                      // NO_SUCH_THREAD
    (300, &["request", "thread_id"]),           // UNABLE_TO_PROCESS_IN_THREAD
    (301, &["max_size"]),                       // DICT_OVERFLOW
    (302, &["thread_group"]),                   // NO_SUCH_THREAD_GROUP
    (303, &["vclock"]),                         // XLOG_NOT_FOUND
];
