//! Serializers: typed keys and values to the bytes of a record, with the byte layouts of the
//! Java client's serializers so that Java consumers (and Kafka Streams serdes) read them.
//!
//! | serializer | types | bytes | Java counterpart |
//! |---|---|---|---|
//! | [`BytesSerializer`] | `Bytes`, `Vec<u8>`, `[u8]` | as given | `ByteArraySerializer`, `BytesSerializer` |
//! | [`StringSerializer`] | `str`, `String` | UTF-8 | `StringSerializer` |
//! | [`ShortSerializer`] | `i16` | 2, big endian | `ShortSerializer` |
//! | [`IntegerSerializer`] | `i32` | 4, big endian | `IntegerSerializer` |
//! | [`LongSerializer`] | `i64` | 8, big endian | `LongSerializer` |
//! | [`FloatSerializer`] | `f32` | 4, raw IEEE 754 bits, big endian | `FloatSerializer` |
//! | [`DoubleSerializer`] | `f64` | 8, IEEE 754 bits with NaN made canonical, big endian | `DoubleSerializer` |
//! | [`BooleanSerializer`] | `bool` | 1: `0x01` or `0x00` | `BooleanSerializer` |
//! | [`UuidSerializer`] | `u128`, `[u8; 16]` | the 36-character text form, UTF-8 | `UUIDSerializer` |
//! | `JsonSerializer` (feature `json`) | any `serde::Serialize` | JSON text | — |
//!
//! A null key or value is not serialized: the record carries `None`, as Java's serializers
//! return `null` for `null`.

use std::sync::Arc;

use bytes::Bytes;

use crate::ProducerError;

/// Turns a `T` into the bytes of a record's key or value. `topic` is the record's topic, for
/// serializers whose output depends on it (schema registries).
pub trait Serializer<T: ?Sized>: Send + Sync {
    fn serialize(&self, topic: &str, data: &T) -> Result<Bytes, ProducerError>;
}

impl<T: ?Sized, S: Serializer<T> + ?Sized> Serializer<T> for Arc<S> {
    fn serialize(&self, topic: &str, data: &T) -> Result<Bytes, ProducerError> {
        (**self).serialize(topic, data)
    }
}

impl<T: ?Sized, S: Serializer<T> + ?Sized> Serializer<T> for Box<S> {
    fn serialize(&self, topic: &str, data: &T) -> Result<Bytes, ProducerError> {
        (**self).serialize(topic, data)
    }
}

impl<T: ?Sized, S: Serializer<T> + ?Sized> Serializer<T> for &S {
    fn serialize(&self, topic: &str, data: &T) -> Result<Bytes, ProducerError> {
        (**self).serialize(topic, data)
    }
}

/// Bytes as they are. `Bytes` is passed on without copying; `Vec<u8>` and `[u8]` are copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesSerializer;

impl Serializer<Bytes> for BytesSerializer {
    fn serialize(&self, _topic: &str, data: &Bytes) -> Result<Bytes, ProducerError> {
        Ok(data.clone())
    }
}

impl Serializer<Vec<u8>> for BytesSerializer {
    fn serialize(&self, _topic: &str, data: &Vec<u8>) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(data))
    }
}

impl Serializer<[u8]> for BytesSerializer {
    fn serialize(&self, _topic: &str, data: &[u8]) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(data))
    }
}

/// Text as UTF-8 (Java's `StringSerializer` with its default encoding).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringSerializer;

impl Serializer<str> for StringSerializer {
    fn serialize(&self, _topic: &str, data: &str) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(data.as_bytes()))
    }
}

impl Serializer<String> for StringSerializer {
    fn serialize(&self, _topic: &str, data: &String) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(data.as_bytes()))
    }
}

/// `i16` as 2 bytes, big endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShortSerializer;

impl Serializer<i16> for ShortSerializer {
    fn serialize(&self, _topic: &str, data: &i16) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(&data.to_be_bytes()))
    }
}

/// `i32` as 4 bytes, big endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntegerSerializer;

impl Serializer<i32> for IntegerSerializer {
    fn serialize(&self, _topic: &str, data: &i32) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(&data.to_be_bytes()))
    }
}

/// `i64` as 8 bytes, big endian.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LongSerializer;

impl Serializer<i64> for LongSerializer {
    fn serialize(&self, _topic: &str, data: &i64) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(&data.to_be_bytes()))
    }
}

/// `f32` as its 4 raw IEEE 754 bytes, big endian (Java's `Float.floatToRawIntBits`: NaN
/// payloads are kept).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloatSerializer;

impl Serializer<f32> for FloatSerializer {
    fn serialize(&self, _topic: &str, data: &f32) -> Result<Bytes, ProducerError> {
        Ok(Bytes::copy_from_slice(&data.to_bits().to_be_bytes()))
    }
}

/// `f64` as its 8 IEEE 754 bytes, big endian, every NaN written as the canonical
/// `0x7ff8000000000000` (Java's `Double.doubleToLongBits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DoubleSerializer;

/// The NaN Java's `Double.doubleToLongBits` writes for every NaN.
const JAVA_CANONICAL_NAN: u64 = 0x7ff8_0000_0000_0000;

impl Serializer<f64> for DoubleSerializer {
    fn serialize(&self, _topic: &str, data: &f64) -> Result<Bytes, ProducerError> {
        let bits = if data.is_nan() {
            JAVA_CANONICAL_NAN
        } else {
            data.to_bits()
        };
        Ok(Bytes::copy_from_slice(&bits.to_be_bytes()))
    }
}

/// `bool` as one byte, `0x01` or `0x00`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BooleanSerializer;

impl Serializer<bool> for BooleanSerializer {
    fn serialize(&self, _topic: &str, data: &bool) -> Result<Bytes, ProducerError> {
        Ok(Bytes::from_static(if *data { &[1] } else { &[0] }))
    }
}

/// A UUID as Java's `UUIDSerializer` writes it: its text form, 36 lowercase characters
/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, UTF-8. The UUID is given as its 16 bytes in
/// network order (`[u8; 16]`, as `uuid::Uuid::as_bytes`) or as a `u128` (most significant
/// byte first, as `uuid::Uuid::as_u128`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UuidSerializer;

impl Serializer<[u8; 16]> for UuidSerializer {
    fn serialize(&self, _topic: &str, data: &[u8; 16]) -> Result<Bytes, ProducerError> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = Vec::with_capacity(36);
        for (i, b) in data.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out.push(b'-');
            }
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0x0f)]);
        }
        Ok(Bytes::from(out))
    }
}

impl Serializer<u128> for UuidSerializer {
    fn serialize(&self, topic: &str, data: &u128) -> Result<Bytes, ProducerError> {
        self.serialize(topic, &data.to_be_bytes())
    }
}

#[cfg(feature = "json")]
pub use json::JsonSerializer;

#[cfg(feature = "json")]
mod json {
    use bytes::Bytes;

    use super::Serializer;
    use crate::ProducerError;

    /// Any `serde::Serialize` value as compact JSON text (UTF-8). A failure (a map with
    /// non-string keys, a `Serialize` impl that errs) is a [`ProducerError::Serialization`]
    /// naming the topic and the type.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct JsonSerializer;

    impl<T: serde::Serialize + ?Sized> Serializer<T> for JsonSerializer {
        fn serialize(&self, topic: &str, data: &T) -> Result<Bytes, ProducerError> {
            serde_json::to_vec(data).map(Bytes::from).map_err(|e| {
                ProducerError::Serialization(format!(
                    "cannot write {} as JSON for topic {topic}: {e}",
                    std::any::type_name::<T>()
                ))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: ?Sized>(s: &impl Serializer<T>, v: &T) -> Vec<u8> {
        s.serialize("t", v).unwrap().to_vec()
    }

    #[test]
    fn bytes_pass_through() {
        let b = Bytes::from_static(b"\x00\x01raw");
        let out = BytesSerializer.serialize("t", &b).unwrap();
        assert_eq!(out, b);
        // No copy for Bytes.
        assert_eq!(out.as_ptr(), b.as_ptr());
        assert_eq!(bytes(&BytesSerializer, &vec![9u8, 8, 7]), [9, 8, 7]);
        assert_eq!(bytes::<[u8]>(&BytesSerializer, b"abc"), b"abc");
        assert_eq!(bytes::<[u8]>(&BytesSerializer, b""), b"");
    }

    #[test]
    fn strings_are_utf8() {
        assert_eq!(bytes::<str>(&StringSerializer, "héllo"), "héllo".as_bytes());
        assert_eq!(
            bytes(&StringSerializer, &"é€𝄞".to_owned()),
            [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9d, 0x84, 0x9e]
        );
        assert_eq!(bytes::<str>(&StringSerializer, ""), b"");
    }

    #[test]
    fn integers_are_big_endian() {
        assert_eq!(bytes(&ShortSerializer, &0x0102), [1, 2]);
        assert_eq!(bytes(&ShortSerializer, &-2), [0xff, 0xfe]);
        assert_eq!(bytes(&IntegerSerializer, &0x0102_0304), [1, 2, 3, 4]);
        assert_eq!(bytes(&IntegerSerializer, &-1), [0xff; 4]);
        assert_eq!(bytes(&IntegerSerializer, &i32::MIN), [0x80, 0, 0, 0]);
        assert_eq!(
            bytes(&LongSerializer, &0x0102_0304_0506_0708),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(
            bytes(&LongSerializer, &-256),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]
        );
    }

    #[test]
    fn floats_have_javas_layout() {
        assert_eq!(bytes(&FloatSerializer, &1.0), [0x3f, 0x80, 0, 0]);
        assert_eq!(bytes(&FloatSerializer, &-2.5), [0xc0, 0x20, 0, 0]);
        // floatToRawIntBits keeps a NaN's payload.
        let odd_nan = f32::from_bits(0x7fc0_0001);
        assert_eq!(bytes(&FloatSerializer, &odd_nan), [0x7f, 0xc0, 0, 1]);

        assert_eq!(
            bytes(&DoubleSerializer, &1.0),
            [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(bytes(&DoubleSerializer, &-0.0), [0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            bytes(&DoubleSerializer, &f64::INFINITY),
            [0x7f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        // doubleToLongBits makes every NaN the canonical one.
        let odd_nan = f64::from_bits(0xfff0_0000_0000_0001);
        assert!(odd_nan.is_nan());
        assert_eq!(
            bytes(&DoubleSerializer, &odd_nan),
            [0x7f, 0xf8, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn booleans_are_one_byte() {
        assert_eq!(bytes(&BooleanSerializer, &true), [1]);
        assert_eq!(bytes(&BooleanSerializer, &false), [0]);
    }

    #[test]
    fn uuids_are_written_as_text() {
        let id: u128 = 0x123e_4567_e89b_12d3_a456_4266_1417_4000;
        assert_eq!(
            bytes(&UuidSerializer, &id),
            b"123e4567-e89b-12d3-a456-426614174000"
        );
        assert_eq!(
            bytes(&UuidSerializer, &id.to_be_bytes()),
            b"123e4567-e89b-12d3-a456-426614174000"
        );
        assert_eq!(
            bytes(&UuidSerializer, &u128::MAX),
            b"ffffffff-ffff-ffff-ffff-ffffffffffff"
        );
        assert_eq!(
            bytes(&UuidSerializer, &0u128),
            b"00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn serializers_work_through_pointers_and_trait_objects() {
        let boxed: Box<dyn Serializer<i32>> = Box::new(IntegerSerializer);
        assert_eq!(boxed.serialize("t", &7).unwrap().as_ref(), [0, 0, 0, 7]);
        let shared: Arc<dyn Serializer<str>> = Arc::new(StringSerializer);
        assert_eq!(bytes::<str>(&shared, "x"), b"x");
        assert_eq!(bytes(&&LongSerializer, &1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(bytes(&boxed, &-1), [0xff; 4]);
    }

    /// A user serializer that fails, as the producer sees it.
    struct Positive;

    impl Serializer<i32> for Positive {
        fn serialize(&self, topic: &str, data: &i32) -> Result<Bytes, ProducerError> {
            if *data < 0 {
                return Err(ProducerError::Serialization(format!(
                    "{data} is negative (topic {topic})"
                )));
            }
            IntegerSerializer.serialize(topic, data)
        }
    }

    #[test]
    fn errors_are_serialization_errors() {
        let err = Positive.serialize("orders", &-1).unwrap_err();
        assert!(matches!(err, ProducerError::Serialization(_)));
        assert_eq!(
            err.to_string(),
            "serialization failed: -1 is negative (topic orders)"
        );
    }

    #[cfg(feature = "json")]
    mod json {
        use std::collections::BTreeMap;

        use super::*;

        #[derive(serde::Serialize)]
        struct Order {
            id: u32,
            item: String,
            tags: Vec<&'static str>,
            price: Option<f64>,
        }

        #[test]
        fn json_values() {
            let order = Order {
                id: 7,
                item: "book".into(),
                tags: vec!["a", "b"],
                price: None,
            };
            assert_eq!(
                bytes(&JsonSerializer, &order),
                br#"{"id":7,"item":"book","tags":["a","b"],"price":null}"#
            );
            assert_eq!(bytes::<str>(&JsonSerializer, "x\"y"), br#""x\"y""#);
            assert_eq!(bytes(&JsonSerializer, &[1, 2, 3]), b"[1,2,3]");
        }

        #[test]
        fn json_errors_name_topic_and_type() {
            // JSON object keys must be strings.
            let mut m = BTreeMap::new();
            m.insert(vec![1u8], 1);
            let err = JsonSerializer.serialize("orders", &m).unwrap_err();
            let ProducerError::Serialization(msg) = &err else {
                panic!("unexpected error {err:?}");
            };
            assert!(msg.contains("orders"), "{msg}");
            assert!(msg.contains("BTreeMap"), "{msg}");
            assert!(msg.contains("key must be a string"), "{msg}");
        }
    }
}
