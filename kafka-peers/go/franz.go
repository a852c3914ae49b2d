package main

// franz-go: the most complete Go client (idempotent by default, transactions, kadm admin).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func franzCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown codec %q", name)
}

func seeds() kgo.Opt { return kgo.SeedBrokers(strings.Split(*brokers, ",")...) }

func franzCreate(ctx context.Context, cl *kgo.Client, t string, partitions int32) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, t)
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("create %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

func franzRecord(t string, i int) *kgo.Record {
	return &kgo.Record{
		Topic:   t,
		Key:     []byte(keyOf(i)),
		Value:   []byte(valueOf(i)),
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(headerOf(i))}},
	}
}

func franzHeader(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "h" {
			return string(h.Value)
		}
	}
	return ""
}

// franzRoundtrip: idempotent acks=all produce with the codec across 3 partitions, then a
// group consumer reads everything once and commits; the committed offsets equal the end
// offsets.
func franzRoundtrip(ctx context.Context) error {
	comp, err := franzCodec(*codec)
	if err != nil {
		return err
	}
	prod, err := kgo.NewClient(seeds(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(comp), kgo.MaxBufferedRecords(*records+1))
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := franzCreate(ctx, prod, *topic, 3); err != nil {
		return err
	}
	batch := make([]*kgo.Record, 0, *records)
	for i := 0; i < *records; i++ {
		batch = append(batch, franzRecord(*topic, i))
	}
	if err := prod.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	check("produced", *records)

	group := "franz-" + *topic
	cons, err := kgo.NewClient(seeds(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer cons.Close()
	s := newSeen()
	for len(s.values) < *records && s.mistake == nil {
		fetches := cons.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch: %v", errs)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			s.add(r.Partition, r.Offset, string(r.Key), string(r.Value), franzHeader(r))
		})
	}
	if err := s.complete(*records); err != nil {
		return err
	}
	check("consumed", len(s.values))
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	adm := kadm.NewClient(prod)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, *topic)
	if err != nil {
		return fmt.Errorf("end offsets: %w", err)
	}
	var sumCommitted, sumEnd int64
	var mismatch error
	ends.Each(func(lo kadm.ListedOffset) {
		sumEnd += lo.Offset
		c, ok := committed.Lookup(*topic, lo.Partition)
		if !ok || c.At != lo.Offset {
			mismatch = fmt.Errorf("partition %d: committed %v, end %d", lo.Partition, c.At, lo.Offset)
		}
		sumCommitted += c.At
	})
	if mismatch != nil {
		return mismatch
	}
	check("committed_total", sumCommitted)
	check("end_total", sumEnd)
	return nil
}

// franzTransactions: three transactions (commit n, abort n, commit n/2); read_committed sees
// exactly the committed records, read_uncommitted all of them.
func franzTransactions(ctx context.Context) error {
	prod, err := kgo.NewClient(seeds(), kgo.TransactionalID("franz-txn-"+*topic),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := franzCreate(ctx, prod, *topic, 3); err != nil {
		return err
	}
	n := *records
	committed := 0
	next := 0
	for round, commit := range []bool{true, false, true} {
		count := n
		if round == 2 {
			count = n / 2
		}
		if err := prod.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		batch := make([]*kgo.Record, 0, count)
		for i := 0; i < count; i++ {
			r := franzRecord(*topic, next+i)
			if !commit {
				r.Value = []byte(fmt.Sprintf("aborted-%06d", next+i))
			}
			batch = append(batch, r)
		}
		if err := prod.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
			committed += count
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
		next += count
	}

	// Reads from the start until `want` values arrived, then polls once more briefly: a record
	// beyond them (an aborted one under read_committed) would show there.
	read := func(isolation kgo.IsolationLevel, want int) (map[string]int, error) {
		cons, err := kgo.NewClient(seeds(), kgo.ConsumeTopics(*topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation))
		if err != nil {
			return nil, err
		}
		defer cons.Close()
		got := map[string]int{}
		total := 0
		poll := func(ctx context.Context) error {
			fetches := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if errs := fetches.Errors(); len(errs) > 0 {
				return fmt.Errorf("fetch: %v", errs)
			}
			fetches.EachRecord(func(r *kgo.Record) {
				got[string(r.Value)]++
				total++
			})
			return nil
		}
		for total < want {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("read %d of %d records before the deadline", total, want)
			}
			if err := poll(ctx); err != nil {
				return nil, err
			}
		}
		settle, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		if err := poll(settle); err != nil {
			return nil, err
		}
		if total != len(got) {
			return nil, fmt.Errorf("read %d records but %d distinct values", total, len(got))
		}
		return got, nil
	}
	committedSeen, err := read(kgo.ReadCommitted(), committed)
	if err != nil {
		return err
	}
	for v := range committedSeen {
		if strings.HasPrefix(v, "aborted-") {
			return fmt.Errorf("read_committed read the aborted %q", v)
		}
	}
	check("read_committed", len(committedSeen))
	allSeen, err := read(kgo.ReadUncommitted(), next)
	if err != nil {
		return err
	}
	check("read_uncommitted", len(allSeen))
	check("committed_written", committed)
	check("written", next)
	return nil
}

// franzAdmin: kadm against the broker: topics, configs, partitions, offsets, delete records,
// cluster metadata, groups.
func franzAdmin(ctx context.Context) error {
	cl, err := kgo.NewClient(seeds())
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := franzCreate(ctx, cl, *topic, 2); err != nil {
		return err
	}
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	check("brokers", len(meta.Brokers))
	topics, err := adm.ListTopics(ctx, *topic)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	check("partitions", len(topics[*topic].Partitions))

	value := "123456789"
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &value},
	}, *topic)
	if err != nil {
		return fmt.Errorf("alter configs: %w", err)
	}
	for _, a := range alter {
		if a.Err != nil {
			return fmt.Errorf("alter configs: %w", a.Err)
		}
	}
	configs, err := adm.DescribeTopicConfigs(ctx, *topic)
	if err != nil {
		return fmt.Errorf("describe configs: %w", err)
	}
	for _, rc := range configs {
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" {
				check("retention.ms", c.MaybeValue())
			}
		}
	}

	if _, err := adm.CreatePartitions(ctx, 1, *topic); err != nil {
		return fmt.Errorf("create partitions: %w", err)
	}
	topics, err = adm.ListTopics(ctx, *topic)
	if err != nil {
		return err
	}
	check("partitions_after", len(topics[*topic].Partitions))

	batch := make([]*kgo.Record, 0, 10)
	for i := 0; i < 10; i++ {
		r := franzRecord(*topic, i)
		r.Partition = 0
		batch = append(batch, r)
	}
	manual, err := kgo.NewClient(seeds(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer manual.Close()
	if err := manual.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: *topic, Partition: 0, At: 4})
	deleted, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	if err := deleted.Error(); err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, *topic)
	if err != nil {
		return err
	}
	if s, ok := starts.Lookup(*topic, 0); ok {
		check("start_offset", s.Offset)
	}
	ends, err := adm.ListEndOffsets(ctx, *topic)
	if err != nil {
		return err
	}
	if e, ok := ends.Lookup(*topic, 0); ok {
		check("end_offset", e.Offset)
	}

	if _, err := adm.DeleteTopics(ctx, *topic); err != nil {
		return fmt.Errorf("delete topics: %w", err)
	}
	topics, err = adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	check("exists_after_delete", topics.Has(*topic))
	return nil
}
