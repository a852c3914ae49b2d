//! Tests of the principal mapping: the vectors of Kafka's own tests and documentation, the
//! corners of Java's replacement and `replaceAll`, and Java's RFC 2253 printing.

use super::*;

fn mapper(rules: &str) -> SslPrincipalMapper {
    SslPrincipalMapper::parse(rules).unwrap()
}

#[test]
fn kafka_valid_rules_parse() {
    for rules in [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ] {
        assert!(SslPrincipalMapper::parse(rules).is_ok(), "{rules}");
    }
}

#[test]
fn kafka_invalid_rules_are_refused() {
    for rules in [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ] {
        assert!(
            matches!(
                SslPrincipalMapper::parse(rules),
                Err(PrincipalError::InvalidRule { .. })
            ),
            "{rules}"
        );
    }
    let err = SslPrincipalMapper::parse("RULE:^CN=(.*?)$/$1/L/U").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid rule: `RULE:^CN=(.*?)$/$1/L/U`, unmatched substring: `/U`"
    );
    let err = SslPrincipalMapper::parse("DEFAULT/L").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid rule: `DEFAULT/L`, unmatched substring: `/L`"
    );
    let err = SslPrincipalMapper::parse("default").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid rule: `default`, unmatched substring: `default`"
    );
    // A pattern the regex engine refuses (Java-only look-ahead).
    assert!(matches!(
        SslPrincipalMapper::parse("RULE:^CN=(?=x)(.*)$/$1/"),
        Err(PrincipalError::Pattern { .. })
    ));
}

#[test]
fn kafka_mapping_examples() {
    let m = mapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, \
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, \
         RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, \
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, \
         DEFAULT",
    );
    assert_eq!(m.map("CN=Duke,OU=ServiceUsers,O=Org,C=US").unwrap(), "duke");
    assert_eq!(
        m.map("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US").unwrap(),
        "duke@sme"
    );
    assert_eq!(m.map("cn=duke,ou=sme,dc=mycp,dc=com").unwrap(), "DUKE@SME");
    assert_eq!(
        m.map("cN=duke,OU=JavaSoft,O=Sun Microsystems").unwrap(),
        "DUKE"
    );
    assert_eq!(
        m.map("OU=JavaSoft,O=Sun Microsystems,C=US").unwrap(),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

#[test]
fn security_docs_example() {
    // The example of Kafka's security documentation, one rule per line.
    let m = mapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n\
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n\
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n\
         DEFAULT",
    );
    assert_eq!(m.len(), 4);
    assert_eq!(
        m.map("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
            .unwrap(),
        "serviceuser"
    );
    assert_eq!(
        m.map("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
            .unwrap(),
        "adminuser@admin"
    );
    assert_eq!(
        m.principal(Some("CN=serviceuser,OU=ServiceUsers,O=x"))
            .unwrap(),
        "User:serviceuser"
    );
    assert_eq!(m.principal(None).unwrap(), "User:ANONYMOUS");
}

#[test]
fn kafka_rules_splitting() {
    let cases = [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        (
            "[RULE:   /     , DEFAULT]",
            "  RULE:   /     / ,  DEFAULT  ",
        ),
        (
            "[RULE:  /     /U, DEFAULT]",
            "  RULE:  /     /U   ,DEFAULT  ",
        ),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        // Empty rules are skipped.
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        (
            "[RULE: /   , DEFAULT]",
            ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
        ),
        (
            "[RULE:   /  /U, DEFAULT]",
            "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
        ),
        // Escape sequences.
        (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
        (
            r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
            r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
        ),
        // Commas and the words RULE: and DEFAULT inside patterns and replacements.
        (
            r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ];
    for (expected, rules) in cases {
        assert_eq!(
            mapper(rules).to_string(),
            format!("SslPrincipalMapper(rules = {expected})"),
            "{rules}"
        );
    }
}

#[test]
fn comma_with_whitespace_inside_a_name() {
    let m = mapper(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT");
    assert_eq!(
        m.map(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz").unwrap(),
        r"Tkac\, Adam"
    );
}

#[test]
fn first_matching_rule_wins_and_no_match_is_an_error() {
    let m = mapper("RULE:^CN=([^,]*),OU=a$/first-$1/, RULE:^CN=([^,]*),.*$/second-$1/");
    assert_eq!(m.map("CN=x,OU=a").unwrap(), "first-x");
    assert_eq!(m.map("CN=x,OU=b").unwrap(), "second-x");
    // The pattern must match the whole name, not a part of it.
    let err = m.map("O=org,CN=x,OU=a").unwrap_err();
    assert_eq!(
        err.to_string(),
        "No rules apply to O=org,CN=x,OU=a, rules [RULE:^CN=([^,]*),OU=a$/first-$1, RULE:^CN=([^,]*),.*$/second-$1]"
    );
    // An empty value has no rule at all: nothing maps.
    let empty = mapper("");
    assert!(empty.is_empty());
    assert!(matches!(
        empty.map("CN=x"),
        Err(PrincipalError::NoMatchingRule { .. })
    ));
    // The default mapper keeps the name.
    assert_eq!(
        SslPrincipalMapper::default().map("CN=x,O=y").unwrap(),
        "CN=x,O=y"
    );
    assert_eq!(
        SslPrincipalMapper::default().to_string(),
        "SslPrincipalMapper(rules = [DEFAULT])"
    );
}

#[test]
fn case_flags() {
    assert_eq!(
        mapper("RULE:^CN=(.*)$/$1/L").map("CN=MiXeD").unwrap(),
        "mixed"
    );
    assert_eq!(
        mapper("RULE:^CN=(.*)$/$1/U").map("CN=MiXeD").unwrap(),
        "MIXED"
    );
    assert_eq!(
        mapper("RULE:^CN=(.*)$/$1/").map("CN=MiXeD").unwrap(),
        "MiXeD"
    );
    assert_eq!(
        mapper("RULE:^CN=(.*)$/$1/U").map("CN=straße").unwrap(),
        "STRASSE"
    );
}

#[test]
fn replacement_follows_java_and_kafka() {
    // A reference beyond the groups is text (Kafka's pass) ...
    assert_eq!(
        mapper("RULE:^CN=(.*?),OU=(.*?)$/$1@$3/")
            .map("CN=a,OU=b")
            .unwrap(),
        "a@$3"
    );
    // ... and digits after a valid group number that would name a missing group are text
    // (Java's rule): $12 with one group is group 1 then "2".
    assert_eq!(mapper("RULE:^CN=(.*)$/$12/").map("CN=a").unwrap(), "a2");
    // With twelve groups, $12 is group 12.
    let twelve = "RULE:^(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)$/$12-$1/";
    assert_eq!(mapper(twelve).map("abcdefghijkl").unwrap(), "l-a");
    // $0 is the whole match; a backslash makes the next character text.
    assert_eq!(
        mapper(r"RULE:^CN=(.*)$/[$0] \$1/").map("CN=a").unwrap(),
        "[CN=a] $1"
    );
    // Named groups.
    assert_eq!(
        mapper("RULE:^CN=(?<who>.*)$/${who}!/").map("CN=a").unwrap(),
        "a!"
    );
    // A group that took no part in the match adds nothing.
    assert_eq!(
        mapper("RULE:^CN=(x)?(.*)$/[$1]$2/").map("CN=a").unwrap(),
        "[]a"
    );
}

#[test]
fn a_broken_replacement_fails_when_its_rule_matches() {
    // No group at all: Kafka leaves `$1` to Java, which throws when the rule is used.
    let m = mapper("RULE:^CN=a$/$1/,DEFAULT");
    assert_eq!(m.map("CN=b").unwrap(), "CN=b");
    let err = m.map("CN=a").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Rule `RULE:^CN=a$/$1` cannot build a name: No group 1"
    );
    for (rules, reason) in [
        (
            "RULE:^(.*)$/$/",
            "Illegal group reference: group index is missing",
        ),
        ("RULE:^(.*)$/$x/", "Illegal group reference"),
        ("RULE:^(.*)$/${nope}/", "No group with name {nope}"),
        (
            "RULE:^(.*)$/${}/",
            "named capturing group has 0 length name",
        ),
        (
            "RULE:^(.*)$/${a/",
            "named capturing group is missing trailing '}'",
        ),
    ] {
        let err = mapper(rules).map("x").unwrap_err();
        assert_eq!(
            err,
            PrincipalError::Replacement {
                rule: mapper(rules).rules[0].to_string(),
                reason: reason.to_string()
            },
            "{rules}"
        );
    }
}

#[test]
fn replace_all_as_java_does() {
    // Java's replaceAll replaces every match, and after a match that reaches the end an
    // empty match there too: "CN=a".replaceAll("(.*)", "x$1") is "xCN=ax".
    assert_eq!(mapper("RULE:(.*)/x$1/").map("CN=a").unwrap(), "xCN=ax");
    // The rule applies when the pattern matches the whole name, but the replacing searches
    // from the left with the first alternative first: "ab".replaceAll("a|ab", "<$0>") is
    // "<a>b".
    assert_eq!(mapper("RULE:a|ab/<$0>/").map("ab").unwrap(), "<a>b");
    // Empty matches step over multi-byte characters.
    assert_eq!(mapper("RULE:x*/-/").map("").unwrap(), "-");
    assert_eq!(mapper("RULE:(?:é|x)*/-/").map("éé").unwrap(), "--");
}

#[test]
fn line_breaks() {
    // Between rules a line break is a space.
    assert_eq!(mapper("RULE:^CN=(.*)$/$1/,\n  DEFAULT").len(), 2);
    assert_eq!(mapper("RULE:^CN=(.*)$/$1/\n,DEFAULT").len(), 2);
    // Inside a rule, where Kafka's parser cannot read one, it is refused.
    assert!(matches!(
        SslPrincipalMapper::parse("RULE:^CN=(.*)$/$1/ x\ny"),
        Err(PrincipalError::LineBreak { .. })
    ));
    // After a backslash it cannot be escaped: the rule does not parse.
    assert!(SslPrincipalMapper::parse("RULE:a\\\nb/c/").is_err());
}

#[test]
fn rfc2253_reverses_the_certificate_order() {
    let rdns = [
        [AttributeTypeAndValue::printable(oid::COUNTRY, "US")],
        [AttributeTypeAndValue::utf8(
            oid::ORGANIZATION,
            "Sun Microsystems",
        )],
        [AttributeTypeAndValue::utf8(
            oid::ORGANIZATIONAL_UNIT,
            "JavaSoft",
        )],
        [AttributeTypeAndValue::utf8(oid::COMMON_NAME, "Duke")],
    ];
    // X500Principal's own documented example.
    assert_eq!(
        rfc2253_name(&rdns),
        "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US"
    );
    let m = mapper("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L");
    assert_eq!(m.map(&rfc2253_name(&rdns)).unwrap(), "duke@javasoft");
    assert_eq!(rfc2253_name::<[AttributeTypeAndValue<'_>; 1]>(&[]), "");
}

#[test]
fn rfc2253_keywords_and_multi_valued_rdns() {
    let rdns: Vec<Vec<AttributeTypeAndValue<'_>>> = vec![
        vec![AttributeTypeAndValue::utf8(oid::DOMAIN_COMPONENT, "com")],
        vec![AttributeTypeAndValue::utf8(
            oid::DOMAIN_COMPONENT,
            "example",
        )],
        vec![
            AttributeTypeAndValue::utf8(oid::STATE, "CA"),
            AttributeTypeAndValue::utf8(oid::LOCALITY, "SF"),
        ],
        vec![
            AttributeTypeAndValue::utf8(oid::COMMON_NAME, "alice"),
            AttributeTypeAndValue::utf8(oid::USER_ID, "a1"),
            AttributeTypeAndValue::utf8(oid::STREET, "Main"),
        ],
    ];
    assert_eq!(
        rfc2253_name(&rdns),
        "CN=alice+UID=a1+STREET=Main,ST=CA+L=SF,DC=example,DC=com"
    );
}

#[test]
fn rfc2253_escaping_as_java() {
    let cn = |value: &str| rfc2253_name(&[[AttributeTypeAndValue::utf8(oid::COMMON_NAME, value)]]);
    assert_eq!(cn("Smith, John"), r"CN=Smith\, John");
    assert_eq!(
        cn(r#"a+b=c<d>e#f;g"h\i"#),
        r#"CN=a\+b\=c\<d\>e\#f\;g\"h\\i"#
    );
    assert_eq!(cn(" lead"), r"CN=\ lead");
    assert_eq!(cn("trail  "), r"CN=trail\ \ ");
    assert_eq!(cn("  "), r"CN=\ \ ");
    assert_eq!(cn(" #x"), r"CN=\ \#x");
    assert_eq!(cn("a\0b"), r"CN=a\00b");
    assert_eq!(cn("mid dle"), "CN=mid dle");
    assert_eq!(cn("ünï@code_*"), "CN=ünï@code_*");
    assert_eq!(escape_rfc2253_value("x\r"), "x\\\r");
}

#[test]
fn rfc2253_other_types_print_as_oid_and_der_hex() {
    let email = AttributeTypeAndValue {
        oid: oid::EMAIL_ADDRESS,
        tag: 22,
        content: b"a@b.c",
    };
    let cn = AttributeTypeAndValue::utf8(oid::COMMON_NAME, "alice");
    assert_eq!(
        rfc2253_name(&[[email], [cn]]),
        "CN=alice,1.2.840.113549.1.9.1=#16056140622e63"
    );
    // A keyword type whose value is not a string prints as hexadecimal too.
    let odd = AttributeTypeAndValue {
        oid: oid::COMMON_NAME,
        tag: 4,
        content: &[1, 2, 3],
    };
    assert_eq!(rfc2253_name(&[[odd]]), "CN=#0403010203");
    // Long values take DER's long length form.
    let long = [b'z'; 200];
    let serial = AttributeTypeAndValue {
        oid: oid::SERIAL_NUMBER,
        tag: 19,
        content: &long,
    };
    let text = rfc2253_name(&[[serial]]);
    assert!(text.starts_with("2.5.4.5=#1381c87a7a"), "{text}");
    assert_eq!(text.len(), "2.5.4.5=#".len() + 2 * (3 + 200));
}

#[test]
fn rfc2253_string_decodings() {
    // BMPString is UTF-16BE; Printable / IA5 / T61 read one byte per character.
    let bmp = AttributeTypeAndValue {
        oid: oid::COMMON_NAME,
        tag: 30,
        content: &[0x00, 0x41, 0x00, 0xE9],
    };
    assert_eq!(rfc2253_name(&[[bmp]]), "CN=Aé");
    let t61 = AttributeTypeAndValue {
        oid: oid::ORGANIZATION,
        tag: 20,
        content: &[0x41, 0xE9],
    };
    assert_eq!(rfc2253_name(&[[t61]]), "O=Aé");
    // Malformed UTF-8 and odd UTF-16 become U+FFFD instead of failing.
    let bad = AttributeTypeAndValue {
        oid: oid::COMMON_NAME,
        tag: 12,
        content: &[0x61, 0xFF],
    };
    assert_eq!(rfc2253_name(&[[bad]]), "CN=a\u{FFFD}");
    let odd = AttributeTypeAndValue {
        oid: oid::COMMON_NAME,
        tag: 30,
        content: &[0x00, 0x41, 0x00],
    };
    assert_eq!(rfc2253_name(&[[odd]]), "CN=A\u{FFFD}");
}
