#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kafka_auth::sasl::fuzzing::sasl(data));
