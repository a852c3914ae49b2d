#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kafka_protocol::fuzzing::produce_view(data));
