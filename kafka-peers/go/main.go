// kafka-peers-go: the current Go clients (franz-go, segmentio/kafka-go, IBM/sarama) as test
// peers. Each scenario talks to the brokers given with -brokers, checks what it reads back
// against what it wrote, prints one "CHECK name value" line per fact the Rust test asserts
// on, and exits 1 with a message on the first mismatch.
//
//	kafka-peers-go -brokers HOST:PORT -scenario NAME [-topic T] [-n N] [-codec C]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

var (
	brokers  = flag.String("brokers", "127.0.0.1:9092", "bootstrap servers, comma-separated")
	scenario = flag.String("scenario", "", "what to run (see scenarios)")
	topic    = flag.String("topic", "go-peer", "topic (created by the scenario)")
	records  = flag.Int("n", 1000, "records to write")
	codec    = flag.String("codec", "none", "compression: none, gzip, snappy, lz4, zstd")
	timeout  = flag.Duration("timeout", 60*time.Second, "the whole scenario's deadline")
	// SASL PLAIN (sarama-roundtrip): a user name turns it on; -sasl-handshake 0 sends the
	// tokens raw after a SaslHandshake v0, 1 in SaslAuthenticate requests.
	saslUser      = flag.String("sasl-user", "", "SASL PLAIN user (sarama)")
	saslPassword  = flag.String("sasl-password", "", "SASL PLAIN password (sarama)")
	saslHandshake = flag.Int("sasl-handshake", 1, "SaslHandshake version: 0 or 1 (sarama)")
)

var scenarios = map[string]func(ctx context.Context) error{
	"franz-roundtrip":    franzRoundtrip,
	"franz-transactions": franzTransactions,
	"franz-admin":        franzAdmin,
	"kafkago-roundtrip":  kafkagoRoundtrip,
	"sarama-roundtrip":   saramaRoundtrip,
}

func main() {
	flag.Parse()
	run, ok := scenarios[*scenario]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown scenario %q; known:", *scenario)
		for name := range scenarios {
			fmt.Fprintf(os.Stderr, " %s", name)
		}
		fmt.Fprintln(os.Stderr)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s failed: %v\n", *scenario, err)
		os.Exit(1)
	}
}

// check prints a fact for the Rust test.
func check(name string, value any) {
	fmt.Printf("CHECK %s %v\n", name, value)
}

// record i as every scenario writes it: key, value and one header derived from i.
func keyOf(i int) string   { return fmt.Sprintf("key-%d", i%97) }
func valueOf(i int) string { return fmt.Sprintf("value-%06d", i) }
func headerOf(i int) string {
	return fmt.Sprintf("h-%d", i)
}

// seen collects what a consumer read and checks it against what was written: every value
// exactly once, each with its key and header, and offsets increasing within a partition.
type seen struct {
	values  map[string]int
	last    map[int32]int64
	mistake error
}

func newSeen() *seen {
	return &seen{values: map[string]int{}, last: map[int32]int64{}}
}

func (s *seen) add(partition int32, offset int64, key, value, header string) {
	if s.mistake != nil {
		return
	}
	var i int
	if _, err := fmt.Sscanf(value, "value-%d", &i); err != nil {
		s.mistake = fmt.Errorf("unexpected value %q at %d/%d", value, partition, offset)
		return
	}
	if key != keyOf(i) || header != headerOf(i) {
		s.mistake = fmt.Errorf("record %d has key %q header %q", i, key, header)
		return
	}
	if last, ok := s.last[partition]; ok && offset <= last {
		s.mistake = fmt.Errorf("partition %d went back from offset %d to %d", partition, last, offset)
		return
	}
	s.last[partition] = offset
	s.values[value]++
	if s.values[value] > 1 {
		s.mistake = fmt.Errorf("%s read twice", value)
	}
}

// complete says whether every one of n values was read once.
func (s *seen) complete(n int) error {
	if s.mistake != nil {
		return s.mistake
	}
	for i := 0; i < n; i++ {
		if s.values[valueOf(i)] != 1 {
			return fmt.Errorf("%s read %d times", valueOf(i), s.values[valueOf(i)])
		}
	}
	if len(s.values) != n {
		return fmt.Errorf("read %d distinct values, wrote %d", len(s.values), n)
	}
	return nil
}
