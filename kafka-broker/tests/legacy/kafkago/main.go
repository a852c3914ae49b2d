// Produces and consumes with segmentio/kafka-go 0.2.1 (Debian's package), whose Conn speaks
// only Produce v2 (magic 1 messages) and Fetch v2 (it reads magic 0 and 1 only).
//
//	kafkago produce ADDR TOPIC N CODEC PREFIX   # CODEC: none, gzip, snappy, lz4
//	kafkago consume ADDR TOPIC N                # prints "offset\tkey\tvalue\ttimestamp_ms"
//
// (timestamp -1 when there is none), then "read N".
//
// Produced message i has key "PREFIX-key-i", value "PREFIX-value-i" and the timestamp
// 1700000000000+i ms; messages go out in requests of up to 7.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

const baseTimestamp = 1700000000000

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kafkago: "+format+"\n", args...)
	os.Exit(1)
}

func dial(addr, topic string) *kafka.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		d := &kafka.Dialer{ClientID: "kafka-go-0.2.1", Timeout: 10 * time.Second}
		conn, err := d.DialLeader(ctx, "tcp", addr, topic, 0)
		if err == nil {
			return conn
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	fail("dial leader of %s: %v", topic, last)
	return nil
}

func codec(name string) kafka.CompressionCodec {
	switch name {
	case "none":
		return nil
	case "gzip":
		return gzip.NewCompressionCodec()
	case "snappy":
		return snappy.NewCompressionCodec()
	case "lz4":
		return lz4.NewCompressionCodec()
	}
	fail("unknown codec %q", name)
	return nil
}

func produce(addr, topic string, n int, codecName, prefix string) {
	conn := dial(addr, topic)
	defer conn.Close()
	c := codec(codecName)
	for start := 0; start < n; start += 7 {
		var msgs []kafka.Message
		for i := start; i < n && i < start+7; i++ {
			msgs = append(msgs, kafka.Message{
				Key:   []byte(fmt.Sprintf("%s-key-%d", prefix, i)),
				Value: []byte(fmt.Sprintf("%s-value-%d", prefix, i)),
				Time:  time.Unix(0, (baseTimestamp+int64(i))*int64(time.Millisecond)),
			})
		}
		conn.SetWriteDeadline(time.Now().Add(15 * time.Second))
		if _, err := conn.WriteCompressedMessages(c, msgs...); err != nil {
			fail("produce messages %d..: %v", start, err)
		}
	}
	fmt.Printf("produced %d\n", n)
}

func consume(addr, topic string, n int) {
	conn := dial(addr, topic)
	defer conn.Close()
	if _, err := conn.Seek(0, kafka.SeekAbsolute); err != nil {
		fail("seek: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	read := 0
	for read < n && time.Now().Before(deadline) {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		batch := conn.ReadBatch(1, 1<<20)
		for read < n {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			ts := int64(-1)
			if !m.Time.IsZero() {
				ts = m.Time.UnixNano() / int64(time.Millisecond)
			}
			fmt.Printf("%d\t%s\t%s\t%d\n", m.Offset, m.Key, m.Value, ts)
			read++
		}
		if err := batch.Close(); err != nil {
			fail("fetch after %d messages: %v", read, err)
		}
	}
	if read < n {
		fail("read %d of %d messages", read, n)
	}
	fmt.Printf("read %d\n", read)
}

func main() {
	args := os.Args[1:]
	if len(args) < 4 {
		fail("usage: produce ADDR TOPIC N CODEC PREFIX | consume ADDR TOPIC N")
	}
	n, err := strconv.Atoi(args[3])
	if err != nil {
		fail("bad count %q", args[3])
	}
	switch {
	case args[0] == "produce" && len(args) == 6:
		produce(args[1], args[2], n, args[4], args[5])
	case args[0] == "consume":
		consume(args[1], args[2], n)
	default:
		fail("unknown command %v", args)
	}
}
