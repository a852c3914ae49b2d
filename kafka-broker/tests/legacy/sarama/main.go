// Produces and consumes with Shopify/sarama 1.22.1 (Debian's package) configured for an old
// Kafka version, which fixes the request versions and message format it uses:
//
//	0.8.2  Produce v0, Fetch v0, magic 0
//	0.9    Produce v0, Fetch v1, magic 0
//	0.10.0 Produce v2, Fetch v2, magic 1
//	0.10.2 Produce v2, Fetch v3, magic 1
//
//	sarama produce VERSION ADDR TOPIC N CODEC PREFIX   # CODEC: none, gzip, snappy, lz4
//	sarama consume VERSION ADDR TOPIC N                # prints "offset\tkey\tvalue\ttimestamp_ms"
//
// Produced message i has key "PREFIX-key-i", value "PREFIX-value-i" and the timestamp
// 1700000000000+i ms (kept from magic 1 on); all N go out in one SendMessages call.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/Shopify/sarama"
)

const baseTimestamp = 1700000000000

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "sarama: "+format+"\n", args...)
	os.Exit(1)
}

func config(version string) *sarama.Config {
	c := sarama.NewConfig()
	switch version {
	case "0.8.2":
		c.Version = sarama.V0_8_2_0
	case "0.9":
		c.Version = sarama.V0_9_0_0
	case "0.10.0":
		c.Version = sarama.V0_10_0_0
	case "0.10.2":
		c.Version = sarama.V0_10_2_0
	default:
		fail("unknown version %q", version)
	}
	c.ClientID = "sarama-" + version
	c.Metadata.Retry.Max = 20
	c.Metadata.Retry.Backoff = 250 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Partitioner = sarama.NewManualPartitioner
	// A refused batch fails the run instead of being retried for minutes.
	c.Producer.Retry.Max = 1
	c.Consumer.Return.Errors = true
	return c
}

func codec(name string) sarama.CompressionCodec {
	switch name {
	case "none":
		return sarama.CompressionNone
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	}
	fail("unknown codec %q", name)
	return sarama.CompressionNone
}

func produce(version, addr, topic string, n int, codecName, prefix string) {
	c := config(version)
	c.Producer.Compression = codec(codecName)
	p, err := sarama.NewSyncProducer([]string{addr}, c)
	if err != nil {
		fail("producer: %v", err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic:     topic,
			Partition: 0,
			Key:       sarama.StringEncoder(fmt.Sprintf("%s-key-%d", prefix, i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("%s-value-%d", prefix, i)),
			Timestamp: time.Unix(0, (baseTimestamp+int64(i))*int64(time.Millisecond)),
		})
	}
	if err := p.SendMessages(msgs); err != nil {
		fail("produce: %v", err)
	}
	fmt.Printf("produced %d\n", n)
}

func consume(version, addr, topic string, n int) {
	consumer, err := sarama.NewConsumer([]string{addr}, config(version))
	if err != nil {
		fail("consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		fail("consume partition: %v", err)
	}
	defer pc.Close()
	timeout := time.After(20 * time.Second)
	read := 0
	for read < n {
		select {
		case m := <-pc.Messages():
			ts := int64(-1)
			if !m.Timestamp.IsZero() {
				ts = m.Timestamp.UnixNano() / int64(time.Millisecond)
			}
			fmt.Printf("%d\t%s\t%s\t%d\n", m.Offset, m.Key, m.Value, ts)
			read++
		case e := <-pc.Errors():
			fail("after %d messages: %v", read, e)
		case <-timeout:
			fail("read %d of %d messages", read, n)
		}
	}
	fmt.Printf("read %d\n", read)
}

func main() {
	args := os.Args[1:]
	if len(args) < 5 {
		fail("usage: produce VERSION ADDR TOPIC N CODEC PREFIX | consume VERSION ADDR TOPIC N")
	}
	n, err := strconv.Atoi(args[4])
	if err != nil {
		fail("bad count %q", args[4])
	}
	switch {
	case args[0] == "produce" && len(args) == 7:
		produce(args[1], args[2], args[3], n, args[5], args[6])
	case args[0] == "consume":
		consume(args[1], args[2], args[3], n)
	default:
		fail("unknown command %v", args)
	}
}
