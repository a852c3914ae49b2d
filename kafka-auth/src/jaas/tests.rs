//! Kafka's documented `sasl.jaas.config` examples, quoting, comments, errors, hiding.

use super::*;

fn one(text: &str) -> LoginModule {
    JaasConfig::parse_single(text).unwrap()
}

fn at(line: usize, column: usize) -> Position {
    Position { line, column }
}

/// The broker's PLAIN listener config from Kafka's security docs (the `\` line continuations
/// of the properties file already joined, as the broker sees the value).
#[test]
fn kafka_plain_server_example() {
    let m = one(
        "org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"admin\" \
         password=\"admin-secret\" \
         user_admin=\"admin-secret\" \
         user_alice=\"alice-secret\";",
    );
    assert_eq!(m.class(), PLAIN_LOGIN_MODULE);
    assert_eq!(m.flag(), ControlFlag::Required);
    assert_eq!(m.username(), Some("admin"));
    assert_eq!(m.password(), Some(Secret::from("admin-secret")));
    let users = m.plain_users();
    assert_eq!(users.len(), 2);
    assert_eq!(users.get("admin"), Some(&Secret::from("admin-secret")));
    assert_eq!(users.get("alice"), Some(&Secret::from("alice-secret")));
    assert_eq!(m.options().count(), 4);
    // The same over several lines, as a JAAS file or a YAML value would have it.
    let multi = one(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n\
         \tusername=\"admin\"\r\n    password=\"admin-secret\"\n user_admin=\"admin-secret\"\n\
         user_alice=\"alice-secret\"\n;\n",
    );
    assert_eq!(multi, m);
}

#[test]
fn kafka_scram_and_oauthbearer_client_examples() {
    let m = one(
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";",
    );
    assert_eq!(m.class(), SCRAM_LOGIN_MODULE);
    assert_eq!(
        (m.username(), m.password()),
        (Some("alice"), Some(Secret::from("alice-secret")))
    );
    // user_ options mean PLAIN users only in the PLAIN module.
    let m = one(&format!("{SCRAM_LOGIN_MODULE} required user_bob=\"x\";"));
    assert!(m.plain_users().is_empty());

    let m = one(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"alice\";",
    );
    assert_eq!(m.class(), OAUTHBEARER_LOGIN_MODULE);
    assert_eq!(m.option("unsecuredLoginStringClaim_sub"), Some("alice"));
    assert_eq!(m.username(), None);
    assert_eq!(m.password(), None);
}

#[test]
fn flags_bare_values_and_several_modules() {
    let ms = JaasConfig::parse(
        "a.B REQUIRED; c.D Requisite k=v; e.F sufficient k=1 k=2; g.H optional useKeyTab=true keyTab=x.keytab;",
    )
    .unwrap();
    let flags: Vec<_> = ms.iter().map(LoginModule::flag).collect();
    assert_eq!(
        flags,
        [
            ControlFlag::Required,
            ControlFlag::Requisite,
            ControlFlag::Sufficient,
            ControlFlag::Optional
        ]
    );
    assert_eq!(ms[0].options().count(), 0);
    assert_eq!(ms[1].option("k"), Some("v"));
    // A repeated option keeps its last value (Java's HashMap.put).
    assert_eq!(ms[2].option("k"), Some("2"));
    assert_eq!(ms[3].option("keyTab"), Some("x.keytab"));
    assert_eq!(
        JaasConfig::parse_single(&format!("{PLAIN_LOGIN_MODULE} required; x required;")),
        Err(JaasError::ModuleCount { count: 2 })
    );
    // No space needed around = and ;, and quoted class names and keys are words too.
    let m = one("\"a.B\" required 'k'=v;");
    assert_eq!((m.class(), m.option("k")), ("a.B", Some("v")));
    let m = one("a.B required k=v;");
    assert_eq!(m, one("a.B required k = v ;"));
    assert_eq!(
        one("a.B required k=v;").option("k"),
        one("a.B required k=\"v\";").option("k")
    );
}

#[test]
fn quoting_and_escapes() {
    let v = |value: &str| {
        one(&format!("a.B required k={value};"))
            .option("k")
            .unwrap()
            .to_owned()
    };
    assert_eq!(v(r#""with space; and = signs""#), "with space; and = signs");
    assert_eq!(v(r#"'single "quoted"'"#), "single \"quoted\"");
    assert_eq!(v(r#""it's""#), "it's");
    assert_eq!(v(r#""a\"b\\c\'d""#), "a\"b\\c'd");
    assert_eq!(v(r#""\n\t\r\b\f\a\v""#), "\n\t\r\u{8}\u{c}\u{7}\u{b}");
    assert_eq!(v(r#""\101\60\0x""#), "A0\0x");
    // \477 is \47 then 7 (three digits only from \0-\3); \z is z.
    assert_eq!(v(r#""\477\z""#), "'7z");
    assert_eq!(v(r#""""#), "");
    assert_eq!(v(r#""pässwörd €""#), "pässwörd €");
    assert_eq!(v("pässwörd"), "pässwörd");
    assert_eq!(v(r#""http://host/path""#), "http://host/path");
    // Bare words stop at quotes, as in Java: the quoted part is then a name without value.
    assert_eq!(
        JaasConfig::parse("a.B required k=ab\"cd\";"),
        Err(JaasError::MissingValue { at: at(1, 18) })
    );
}

#[test]
fn comments() {
    let m = one("// the broker's users\n\
         a.B /* flag next */ required\n\
         k=v // trailing\n\
         / a lone slash comments too\n\
         j=w;\n/* after */");
    assert_eq!((m.option("k"), m.option("j")), (Some("v"), Some("w")));
    // '/' in a bare value starts a comment (as in Kafka): a URL must be quoted.
    assert_eq!(
        JaasConfig::parse("a.B required url=http://host/x;"),
        Err(JaasError::MissingSemicolon { at: at(1, 32) })
    );
    assert_eq!(
        JaasConfig::parse("a.B required k=v; /* open"),
        Ok(vec![one("a.B required k=v;")])
    );
}

#[test]
fn errors_name_the_place() {
    let e = |t: &str| JaasConfig::parse(t).unwrap_err();
    assert_eq!(e(""), JaasError::NoLoginModule);
    assert_eq!(e(" \n\t "), JaasError::NoLoginModule);
    assert_eq!(e("// only a comment"), JaasError::NoLoginModule);
    assert_eq!(e("a.B"), JaasError::MissingFlag { at: at(1, 4) });
    assert_eq!(e("a.B maybe;"), JaasError::InvalidFlag { at: at(1, 5) });
    assert_eq!(e("a.B ;"), JaasError::InvalidFlag { at: at(1, 5) });
    assert_eq!(
        e("a.B required"),
        JaasError::MissingSemicolon { at: at(1, 13) }
    );
    assert_eq!(
        e("a.B required k=v"),
        JaasError::MissingSemicolon { at: at(1, 17) }
    );
    assert_eq!(
        e("a.B required\n  k;"),
        JaasError::MissingValue { at: at(2, 3) }
    );
    assert_eq!(
        e("a.B required k=;"),
        JaasError::MissingValue { at: at(1, 14) }
    );
    assert_eq!(
        e("a.B required k=="),
        JaasError::MissingValue { at: at(1, 14) }
    );
    assert_eq!(
        e("a.B required k v;"),
        JaasError::MissingValue { at: at(1, 14) }
    );
    assert_eq!(
        e("a.B required k="),
        JaasError::MissingValue { at: at(1, 14) }
    );
    assert_eq!(
        e("a.B required =v;"),
        JaasError::ExpectedOptionName { at: at(1, 14) }
    );
    assert_eq!(
        e("; a.B required;"),
        JaasError::ExpectedClass { at: at(1, 1) }
    );
    assert_eq!(
        e("=a.B required;"),
        JaasError::ExpectedClass { at: at(1, 1) }
    );
    assert_eq!(
        e("a.B required k=\"v;"),
        JaasError::UnterminatedQuote { at: at(1, 16) }
    );
    assert_eq!(
        e("a.B required k='v\n';"),
        JaasError::UnterminatedQuote { at: at(1, 16) }
    );
    assert_eq!(
        e("a.B required k=\"v\\"),
        JaasError::UnterminatedQuote { at: at(1, 16) }
    );
    assert_eq!(
        e("a.B required k=\u{85}v;"),
        JaasError::UnexpectedCharacter { at: at(1, 16) }
    );
    assert_eq!(
        e("a.B required k=v; x.Y"),
        JaasError::MissingFlag { at: at(1, 22) }
    );
    assert_eq!(
        e("a.B required k=\"v;").to_string(),
        "JAAS config, line 1, column 16: quoted value not closed on its line"
    );
}

#[test]
fn errors_never_echo_values() {
    for text in [
        "a.B required password=\"hunter2-secret",
        "a.B hunter2-secret;",
        "a.B required hunter2-secret;",
        "a.B required \"hunter2-secret\" \"x\";",
        "hunter2-secret",
        "a.B required password=hunter2-secret",
    ] {
        let err = JaasConfig::parse(text).unwrap_err();
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }
}

#[test]
fn debug_hides_secrets() {
    let m = one(
        "a.B required username=\"admin\" password=\"pw-1\" user_alice=\"pw-2\" clientSecret=\"pw-3\" \
         sslKeystorePassword=\"pw-4\" some.SECRET=\"pw-5\" unsecuredLoginStringClaim_sub=\"alice\";",
    );
    let d = format!("{m:?}");
    assert!(!d.contains("pw-"), "{d}");
    assert!(
        d.contains("\"admin\"") && d.contains("\"alice\"") && d.contains("[hidden]"),
        "{d}"
    );
    assert_eq!(format!("{:#?}", m).matches("[hidden]").count(), 5);
    for (name, sensitive) in [
        ("password", true),
        ("user_bob", true),
        ("clientSecret", true),
        ("PASSWORD", true),
        ("username", false),
        ("user", false),
        ("scope", false),
        ("unsecuredLoginStringClaim_sub", false),
    ] {
        assert_eq!(is_sensitive_option(name), sensitive, "{name}");
    }
}

#[test]
fn plain_users_skip_the_empty_name() {
    let m = one(&format!(
        "{PLAIN_LOGIN_MODULE} required user_=\"x\" user_a=\"y\" users=\"z\";"
    ));
    assert_eq!(m.plain_users().into_keys().collect::<Vec<_>>(), ["a"]);
}
