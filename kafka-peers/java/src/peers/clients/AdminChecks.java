package peers.clients;

import static peers.clients.Checks.check;
import static peers.clients.Checks.equal;
import static peers.clients.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * The Java AdminClient against a broker: every call Kafka's command-line tools make, each
 * answer checked against what was done. A call the broker does not serve must fail with
 * UnsupportedVersionException within seconds; `CHECK call.NAME served|unsupported` says which.
 */
public final class AdminChecks {
    private AdminChecks() {}

    /** How long a call the broker does not serve may take to fail. */
    static final long UNSUPPORTED_WITHIN_MS = 5000;

    public static void main(String[] args) {
        Map<String, Checks.Scenario> all = new LinkedHashMap<>();
        all.put("topics", AdminChecks::topics);
        all.put("offsets", AdminChecks::offsets);
        all.put("groups", AdminChecks::groups);
        all.put("transactions", AdminChecks::transactions);
        all.put("cluster", AdminChecks::cluster);
        all.put("scram", AdminChecks::scram);
        all.put("quotas", AdminChecks::quotas);
        all.put("unsupported", AdminChecks::unsupported);
        Checks.main("AdminChecks", args, all);
    }

    interface Call<T> {
        T get() throws Exception;
    }

    interface Verify<T> {
        void accept(T t) throws Exception;
    }

    /**
     * A call that is either served (its answer then verified) or fails quickly with
     * UnsupportedVersionException; anything else fails the program.
     */
    static <T> boolean served(String name, Call<T> call, Verify<T> verify) throws Exception {
        long t0 = System.nanoTime();
        T answer;
        try {
            answer = call.get();
        } catch (ExecutionException e) {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (e.getCause() instanceof UnsupportedVersionException) {
                require(ms < UNSUPPORTED_WITHIN_MS, name + ": UnsupportedVersionException after " + ms + " ms");
                System.err.println(name + ": " + e.getCause().getMessage());
                check("call." + name, "unsupported");
                return false;
            }
            throw new Checks.Failed(name + " failed after " + ms + " ms: " + e.getCause());
        }
        verify.accept(answer);
        check("call." + name, "served");
        return true;
    }

    static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    static Throwable failure(KafkaFuture<?> f) throws Exception {
        try {
            f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        return null;
    }

    static int nodeId(Admin admin) throws Exception {
        return get(admin.describeCluster().nodes()).iterator().next().id();
    }

    static Map<String, String> values(Config config, String... names) {
        Map<String, String> out = new TreeMap<>();
        for (String n : names) {
            ConfigEntry e = config.get(n);
            out.put(n, e == null ? null : e.value());
        }
        return out;
    }

    /** Topics, partitions and configs, as kafka-topics and kafka-configs use them. */
    static void topics(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            int node = nodeId(admin);
            NewTopic a = new NewTopic("adm-a", 3, (short) 1)
                    .configs(Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
            NewTopic b = new NewTopic("adm-b", 1, (short) 1);
            CreateTopicsResult created = admin.createTopics(List.of(a, b));
            get(created.all());
            equal(3, get(created.numPartitions("adm-a")), "createTopics numPartitions");
            equal(1, get(created.replicationFactor("adm-a")), "createTopics replicationFactor");
            Config createdConfig = get(created.config("adm-a"));
            equal("3600000", createdConfig.get("retention.ms").value(), "createTopics config retention.ms");
            require(!get(created.topicId("adm-a")).equals(org.apache.kafka.common.Uuid.ZERO_UUID), "createTopics topic id");
            Throwable again = failure(admin.createTopics(List.of(new NewTopic("adm-b", 1, (short) 1))).all());
            require(again instanceof TopicExistsException, "createTopics of an existing topic: " + again);
            check("call.createTopics", "served");

            Set<String> names = get(admin.listTopics().names());
            require(names.containsAll(Set.of("adm-a", "adm-b")), "listTopics: " + names);
            require(!names.contains("__consumer_offsets"), "listTopics lists an internal topic: " + names);
            Set<String> withInternal = get(admin.listTopics(
                    new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true)).names());
            require(withInternal.contains("__consumer_offsets"), "listTopics(listInternal): " + withInternal);
            check("call.listTopics", "served");

            TopicDescription da = get(admin.describeTopics(List.of("adm-a")).allTopicNames()).get("adm-a");
            equal(3, da.partitions().size(), "describeTopics partitions");
            equal(false, da.isInternal(), "describeTopics internal");
            for (TopicPartitionInfo p : da.partitions()) {
                equal(node, p.leader().id(), "leader of adm-a-" + p.partition());
                equal(1, p.replicas().size(), "replicas of adm-a-" + p.partition());
                equal(1, p.isr().size(), "isr of adm-a-" + p.partition());
            }
            TopicDescription byId = get(admin.describeTopics(
                    org.apache.kafka.common.TopicCollection.ofTopicIds(List.of(da.topicId()))).allTopicIds()).get(da.topicId());
            equal("adm-a", byId.name(), "describeTopics by id");
            check("call.describeTopics", da.partitions().size());

            get(admin.createPartitions(Map.of("adm-b", NewPartitions.increaseTo(3))).all());
            equal(3, get(admin.describeTopics(List.of("adm-b")).allTopicNames()).get("adm-b").partitions().size(),
                    "partitions after createPartitions");
            Throwable fewer = failure(admin.createPartitions(Map.of("adm-b", NewPartitions.increaseTo(2))).all());
            require(fewer instanceof InvalidPartitionsException, "createPartitions to fewer: " + fewer);
            check("call.createPartitions", "served");

            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "adm-a");
            Config c = get(admin.describeConfigs(List.of(topic)).all()).get(topic);
            equal("3600000", c.get("retention.ms").value(), "describeConfigs retention.ms");
            equal(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source(), "source of retention.ms");
            ConfigEntry segment = c.get("segment.bytes");
            require(segment != null && segment.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                    "segment.bytes of describeConfigs: " + segment);
            ConfigResource brokerResource = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(node));
            Config brokerConfig = get(admin.describeConfigs(List.of(brokerResource)).all()).get(brokerResource);
            require(brokerConfig.get("log.retention.hours") != null || brokerConfig.get("log.retention.ms") != null,
                    "broker config lacks log.retention: " + brokerConfig.entries().size() + " entries");
            check("call.describeConfigs", values(c, "retention.ms", "cleanup.policy"));

            Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET)));
            get(admin.incrementalAlterConfigs(ops).all());
            c = get(admin.describeConfigs(List.of(topic)).all()).get(topic);
            equal("7200000", c.get("retention.ms").value(), "retention.ms after SET");
            equal("delete,compact", c.get("cleanup.policy").value(), "cleanup.policy after APPEND");
            equal("2000000", c.get("max.message.bytes").value(), "max.message.bytes after SET");
            get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT)))).all());
            c = get(admin.describeConfigs(List.of(topic)).all()).get(topic);
            equal("604800000", c.get("retention.ms").value(), "retention.ms after DELETE");
            equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, c.get("retention.ms").source(), "source after DELETE");
            equal("delete", c.get("cleanup.policy").value(), "cleanup.policy after SUBTRACT");
            check("call.incrementalAlterConfigs", values(c, "retention.ms", "cleanup.policy", "max.message.bytes"));

            get(admin.deleteTopics(List.of("adm-b")).all());
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (get(admin.listTopics().names()).contains("adm-b")) {
                require(System.nanoTime() < deadline, "adm-b still listed after deleteTopics");
                Thread.sleep(100);
            }
            Throwable gone = failure(admin.describeTopics(List.of("adm-b")).allTopicNames());
            require(gone instanceof UnknownTopicOrPartitionException, "describeTopics of a deleted topic: " + gone);
            check("call.deleteTopics", "served");
        }
    }

    /** listOffsets (earliest, latest, timestamp, max timestamp) and deleteRecords. */
    static void offsets(String bootstrap) throws Exception {
        String t = "adm-offsets";
        Checks.createTopics(bootstrap, Map.of(t, 2));
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Checks.producer(bootstrap))) {
            for (int i = 0; i < 10; i++) {
                // The largest timestamp is record 5's, in the middle.
                long ts = i == 5 ? base + 100_000 : base + i * 1000L;
                p.send(new ProducerRecord<>(t, 0, ts, null, "v" + i)).get();
            }
        }
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            Map<TopicPartition, ListOffsetsResultInfo> earliest =
                    get(admin.listOffsets(Map.of(p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all());
            Map<TopicPartition, ListOffsetsResultInfo> latest =
                    get(admin.listOffsets(Map.of(p0, OffsetSpec.latest(), p1, OffsetSpec.latest())).all());
            ListOffsetsResultInfo at = get(admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(base + 2500))).all()).get(p0);
            ListOffsetsResultInfo max = get(admin.listOffsets(Map.of(p0, OffsetSpec.maxTimestamp())).all()).get(p0);
            equal(0L, earliest.get(p0).offset(), "earliest of p0");
            equal(10L, latest.get(p0).offset(), "latest of p0");
            equal(0L, latest.get(p1).offset(), "latest of the empty p1");
            equal(3L, at.offset(), "offset for a timestamp");
            equal(base + 3000, at.timestamp(), "timestamp for a timestamp");
            equal(5L, max.offset(), "offset of the max timestamp");
            equal(base + 100_000, max.timestamp(), "max timestamp");
            ListOffsetsResultInfo future = get(admin.listOffsets(Map.of(p0, OffsetSpec.forTimestamp(base + 200_000))).all()).get(p0);
            equal(-1L, future.offset(), "offset for a timestamp after every record");
            check("call.listOffsets", earliest.get(p0).offset() + " " + latest.get(p0).offset() + " " + at.offset()
                    + " " + max.offset() + " " + (max.timestamp() - base));

            Map<TopicPartition, KafkaFuture<DeletedRecords>> deleted =
                    admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(4))).lowWatermarks();
            equal(4L, get(deleted.get(p0)).lowWatermark(), "low watermark after deleteRecords");
            equal(4L, get(admin.listOffsets(Map.of(p0, OffsetSpec.earliest())).all()).get(p0).offset(),
                    "earliest after deleteRecords");
            Throwable beyond = failure(admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(11))).all());
            require(beyond instanceof org.apache.kafka.common.errors.OffsetOutOfRangeException,
                    "deleteRecords beyond the end: " + beyond);
            check("call.deleteRecords", 4);
        }
    }

    /** Consumer groups as kafka-consumer-groups sees and changes them. */
    static void groups(String bootstrap) throws Exception {
        String t = "adm-groups";
        String g = "adm-group";
        Checks.createTopics(bootstrap, Map.of(t, 3));
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Checks.producer(bootstrap))) {
            for (int i = 0; i < 30; i++) {
                p.send(new ProducerRecord<>(t, i % 3, null, "v" + i));
            }
        }
        List<TopicPartition> tps = new ArrayList<>(Checks.partitions(t, 3));
        try (Admin admin = Admin.create(Checks.admin(bootstrap));
                KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(Checks.consumer(bootstrap, g))) {
            consumer.subscribe(List.of(t));
            int read = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (read < 30) {
                require(System.nanoTime() < deadline, "group member read " + read + " of 30");
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
            consumer.commitSync();

            // While the member is there.
            ConsumerGroupDescription live = get(admin.describeConsumerGroups(List.of(g)).all()).get(g);
            equal(GroupState.STABLE, live.groupState(), "state with a member");
            equal(1, live.members().size(), "members");
            MemberDescription m = live.members().iterator().next();
            equal(Set.copyOf(tps), m.assignment().topicPartitions(), "member's assignment");
            require(m.clientId().startsWith("consumer-" + g), "member client id " + m.clientId());
            equal("range", live.partitionAssignor().split(",")[0].isEmpty() ? "" : live.partitionAssignor(),
                    "partition assignor");
            equal(GroupType.CLASSIC, live.type(), "group type");
            check("call.describeConsumerGroups", live.groupState() + " " + live.members().size() + " "
                    + m.assignment().topicPartitions().size() + " " + live.partitionAssignor());

            Collection<GroupListing> listed = get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all());
            GroupListing mine = listed.stream().filter(l -> l.groupId().equals(g)).findFirst().orElse(null);
            require(mine != null, "listGroups: " + listed);
            equal(java.util.Optional.of(GroupState.STABLE), mine.groupState(), "listed state");
            equal("consumer", mine.protocol(), "listed protocol type");
            Collection<GroupListing> stable = get(admin.listGroups(
                    ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.EMPTY))).all());
            require(stable.stream().noneMatch(l -> l.groupId().equals(g)), "listGroups(EMPTY) lists a stable group");
            check("call.listGroups", mine.groupState().get());

            Map<TopicPartition, OffsetAndMetadata> offsets =
                    get(admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata());
            for (TopicPartition tp : tps) {
                equal(10L, offsets.get(tp) == null ? null : offsets.get(tp).offset(), "committed offset of " + tp);
            }
            check("call.listConsumerGroupOffsets", offsets.size());

            // Offsets of a group with members cannot be altered (UNKNOWN_MEMBER_ID in Kafka).
            Throwable busy = failure(admin.alterConsumerGroupOffsets(g, Map.of(tps.get(0), new OffsetAndMetadata(1))).all());
            require(busy != null, "alterConsumerGroupOffsets of a group with a member succeeded");
            System.err.println("alterConsumerGroupOffsets with a member: " + busy);
            consumer.unsubscribe();
            consumer.close();

            ConsumerGroupDescription empty = get(admin.describeConsumerGroups(List.of(g)).all()).get(g);
            equal(GroupState.EMPTY, empty.groupState(), "state after the member left");
            equal(0, empty.members().size(), "members after the member left");

            get(admin.alterConsumerGroupOffsets(g, Map.of(tps.get(0), new OffsetAndMetadata(2, "reset"))).all());
            offsets = get(admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata());
            equal(2L, offsets.get(tps.get(0)).offset(), "offset after alterConsumerGroupOffsets");
            equal("reset", offsets.get(tps.get(0)).metadata(), "metadata after alterConsumerGroupOffsets");
            check("call.alterConsumerGroupOffsets", offsets.get(tps.get(0)).offset());

            get(admin.deleteConsumerGroupOffsets(g, Set.of(tps.get(1))).all());
            offsets = get(admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata());
            require(!offsets.containsKey(tps.get(1)) || offsets.get(tps.get(1)) == null,
                    "offset still there after deleteConsumerGroupOffsets: " + offsets);
            equal(10L, offsets.get(tps.get(2)).offset(), "offset kept by deleteConsumerGroupOffsets");
            check("call.deleteConsumerGroupOffsets", offsets.values().stream().filter(o -> o != null).count());

            get(admin.deleteConsumerGroups(List.of(g)).all());
            listed = get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all());
            require(listed.stream().noneMatch(l -> l.groupId().equals(g)), "listed after deleteConsumerGroups: " + listed);
            Throwable missing = failure(admin.describeConsumerGroups(List.of(g)).all());
            String after;
            if (missing == null) {
                ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(g)).all()).get(g);
                after = d.groupState().toString();
            } else {
                require(missing instanceof GroupIdNotFoundException, "describe after delete: " + missing);
                after = "GroupIdNotFound";
            }
            check("call.deleteConsumerGroups", after);
        }
    }

    /** describeProducers, listTransactions, describeTransactions, abortTransaction (kafka-transactions). */
    static void transactions(String bootstrap) throws Exception {
        String t = "adm-txn";
        Checks.createTopics(bootstrap, Map.of(t, 1));
        TopicPartition tp = new TopicPartition(t, 0);
        Properties pp = Checks.producer(bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "adm-txn-id");
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(t, 0, null, "open-" + i));
            }
            producer.flush();

            PartitionProducerState state = get(admin.describeProducers(List.of(tp)).all()).get(tp);
            equal(1, state.activeProducers().size(), "active producers: " + state);
            ProducerState ps = state.activeProducers().get(0);
            equal(4, ps.lastSequence(), "last sequence");
            equal(java.util.OptionalLong.of(0), ps.currentTransactionStartOffset(), "transaction start offset");
            check("call.describeProducers", ps.lastSequence() + " " + ps.currentTransactionStartOffset().getAsLong());

            Collection<TransactionListing> listed = get(admin.listTransactions().all());
            TransactionListing mine = listed.stream().filter(l -> l.transactionalId().equals("adm-txn-id"))
                    .findFirst().orElse(null);
            require(mine != null, "listTransactions: " + listed);
            equal(ps.producerId(), mine.producerId(), "listed producer id");
            equal(TransactionState.ONGOING, mine.state(), "listed state");
            check("call.listTransactions", mine.state());

            TransactionDescription d = get(admin.describeTransactions(List.of("adm-txn-id")).all()).get("adm-txn-id");
            equal(TransactionState.ONGOING, d.state(), "described state");
            equal(ps.producerId(), d.producerId(), "described producer id");
            equal(ps.producerEpoch(), d.producerEpoch(), "described producer epoch");
            equal(Set.of(tp), d.topicPartitions(), "described partitions");
            equal(60000L, (long) d.transactionTimeoutMs(), "described timeout");
            require(d.transactionStartTimeMs().isPresent(), "described start time");
            check("call.describeTransactions", d.state() + " " + d.topicPartitions().size());

            // kafka-transactions abort: a marker written to the partition by the admin client.
            get(admin.abortTransaction(new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                    ps.coordinatorEpoch().orElse(0))).all());
            state = get(admin.describeProducers(List.of(tp)).all()).get(tp);
            require(state.activeProducers().stream().allMatch(p -> p.currentTransactionStartOffset().isEmpty()),
                    "an open transaction after abortTransaction: " + state);
            Properties cp = Checks.consumer(bootstrap, null);
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                long end = c.endOffsets(List.of(tp)).get(tp);
                equal(6L, end, "last stable offset after abortTransaction (5 records and a marker)");
                List<ConsumerRecord<String, String>> records = Checks.readAll(c, List.of(tp), Duration.ofSeconds(20));
                equal(0, records.size(), "read_committed records after abortTransaction");
            }
            check("call.abortTransaction", "served");
        } finally {
            producer.close(Duration.ZERO);
        }
    }

    /** describeCluster, describeLogDirs, describeMetadataQuorum, describeFeatures. */
    static void cluster(String bootstrap) throws Exception {
        Checks.createTopics(bootstrap, Map.of("adm-dirs", 2));
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Checks.producer(bootstrap))) {
            p.send(new ProducerRecord<>("adm-dirs", 0, null, "x".repeat(1000))).get();
        }
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            DescribeClusterResult cluster = admin.describeCluster();
            Collection<org.apache.kafka.common.Node> nodes = get(cluster.nodes());
            equal(1, nodes.size(), "nodes");
            org.apache.kafka.common.Node node = nodes.iterator().next();
            String clusterId = get(cluster.clusterId());
            require(clusterId != null && !clusterId.isEmpty(), "cluster id");
            equal(bootstrap, node.host() + ":" + node.port(), "the node's address");
            org.apache.kafka.common.Node controller = get(cluster.controller());
            check("call.describeCluster", nodes.size() + " " + node.id() + " " + (controller == null ? "none" : controller.id()));

            served("describeLogDirs", () -> get(admin.describeLogDirs(List.of(node.id())).allDescriptions()),
                    dirs -> {
                        Map<String, LogDirDescription> mine = dirs.get(node.id());
                        equal(1, mine.size(), "log dirs");
                        LogDirDescription dir = mine.values().iterator().next();
                        require(dir.error() == null, "log dir error " + dir.error());
                        TopicPartition p0 = new TopicPartition("adm-dirs", 0);
                        require(dir.replicaInfos().containsKey(p0), "replicas of the log dir: " + dir.replicaInfos().keySet());
                        require(dir.replicaInfos().get(p0).size() > 1000, "size of adm-dirs-0: " + dir.replicaInfos().get(p0).size());
                        equal(0L, dir.replicaInfos().get(new TopicPartition("adm-dirs", 1)).size(), "size of an empty partition");
                        check("logdirs.dir", mine.keySet().iterator().next());
                    });

            served("describeReplicaLogDirs", () -> get(admin.describeReplicaLogDirs(
                    List.of(new TopicPartitionReplica("adm-dirs", 0, node.id()))).all()), dirs -> {
                        var info = dirs.values().iterator().next();
                        require(info.getCurrentReplicaLogDir() != null, "replica log dir: " + info);
                        check("replicalogdirs.dir", info.getCurrentReplicaLogDir());
                    });
            served("describeMetadataQuorum", () -> get(admin.describeMetadataQuorum().quorumInfo()), q -> {
                require(q.leaderId() >= 0, "quorum leader " + q);
                require(!q.voters().isEmpty(), "quorum voters " + q);
            });
            // Served from the ApiVersions answer's feature fields; the finalized features are
            // printed for the Rust test (Kafka lists metadata.version, kraft.version, ...).
            FeatureMetadata features = get(admin.describeFeatures().featureMetadata());
            check("call.describeFeatures", "served");
            check("features.finalized", new TreeMap<>(features.finalizedFeatures()).keySet());
            check("features.supported", new TreeMap<>(features.supportedFeatures()).keySet());
        }
    }

    /**
     * SCRAM credentials as kafka-configs --alter --add-config 'SCRAM-SHA-256=[...]' makes them:
     * upserted, described (mechanisms and iterations, never a key), one deleted, an unknown
     * user RESOURCE_NOT_FOUND, too few iterations UNACCEPTABLE_CREDENTIAL.
     */
    static void scram(String bootstrap) throws Exception {
        Properties p = Checks.admin(bootstrap);
        try (Admin admin = Admin.create(p)) {
            // One change of a user per request, as kafka-configs must: Kafka refuses a user
            // twice in one request (DuplicateResourceException), whatever the mechanisms.
            boolean served = served("alterUserScramCredentials", () -> get(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("scram-alice",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "alice-secret"),
                    new UserScramCredentialUpsertion("scram-bob",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "bob-secret"))).all()),
                    v -> { });
            if (!served) {
                return;
            }
            get(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("scram-alice",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "alice-secret"))).all());
            Throwable twice = failure(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("scram-zed",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "pw"),
                    new UserScramCredentialUpsertion("scram-zed",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "pw"))).all());
            check("scram.twice", twice == null ? "none" : twice.getClass().getSimpleName());
            Map<String, UserScramCredentialsDescription> all = get(admin.describeUserScramCredentials().all());
            check("scram.users", new TreeMap<>(all).keySet());
            check("scram.alice", all.get("scram-alice").credentialInfos().stream()
                    .map(i -> i.mechanism() + "/" + i.iterations()).sorted().collect(Collectors.toList()));
            get(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion("scram-alice", ScramMechanism.SCRAM_SHA_256))).all());
            Map<String, UserScramCredentialsDescription> after =
                    get(admin.describeUserScramCredentials(List.of("scram-alice")).all());
            check("scram.alice.after", after.get("scram-alice").credentialInfos().stream()
                    .map(i -> i.mechanism() + "/" + i.iterations()).sorted().collect(Collectors.toList()));
            // all() leaves users that do not exist out; description(user) fails for them.
            Throwable unknown = failure(admin.describeUserScramCredentials(List.of("nobody")).description("nobody"));
            check("scram.unknown", unknown == null ? "none" : unknown.getClass().getSimpleName());
            Throwable weak = failure(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("scram-carol",
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), "pw"))).all());
            check("scram.weak", weak == null ? "none" : weak.getClass().getSimpleName());
        }
    }

    /** The entities and values of a DescribeClientQuotas answer, sorted, as one line. */
    static String quotaLine(Map<ClientQuotaEntity, Map<String, Double>> found) {
        TreeMap<String, String> out = new TreeMap<>();
        found.forEach((entity, values) -> out.put(new TreeMap<>(entity.entries()).toString(),
                new TreeMap<>(values).toString()));
        return out.toString();
    }

    static ClientQuotaEntity quotaEntity(String... typeAndName) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < typeAndName.length; i += 2) {
            m.put(typeAndName[i], typeAndName[i + 1]);
        }
        return new ClientQuotaEntity(m);
    }

    /**
     * Client quotas as kafka-configs --entity-type users/clients --alter --add-config sets
     * them (KIP-546): set on a user, the default client id and a user with a client id,
     * described with Kafka's filters, one removed, a validate-only change left out, an unknown
     * key refused with InvalidRequestException.
     */
    static void quotas(String bootstrap) throws Exception {
        Properties p = Checks.admin(bootstrap);
        try (Admin admin = Admin.create(p)) {
            boolean served = served("alterClientQuotas", () -> get(admin.alterClientQuotas(List.of(
                    new ClientQuotaAlteration(quotaEntity("user", "alice"), List.of(
                            new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))),
                    new ClientQuotaAlteration(quotaEntity("client-id", null), List.of(
                            new ClientQuotaAlteration.Op("consumer_byte_rate", 4096.0))),
                    new ClientQuotaAlteration(quotaEntity("user", "alice", "client-id", "app"), List.of(
                            new ClientQuotaAlteration.Op("request_percentage", 50.0))))).all()),
                    v -> { });
            if (!served) {
                return;
            }
            check("quotas.all", quotaLine(get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities())));
            check("quotas.alice", quotaLine(get(admin.describeClientQuotas(ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofEntity("user", "alice")))).entities())));
            check("quotas.default_client", quotaLine(get(admin.describeClientQuotas(ClientQuotaFilter.contains(List.of(
                    ClientQuotaFilterComponent.ofDefaultEntity("client-id")))).entities())));
            check("quotas.any_user", quotaLine(get(admin.describeClientQuotas(ClientQuotaFilter.contains(List.of(
                    ClientQuotaFilterComponent.ofEntityType("user")))).entities())));
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(quotaEntity("user", "alice"), List.of(
                    new ClientQuotaAlteration.Op("consumer_byte_rate", null))))).all());
            get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(quotaEntity("user", "bob"), List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", 1.0)))),
                    new AlterClientQuotasOptions().validateOnly(true)).all());
            check("quotas.after", quotaLine(get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities())));
            Throwable bad = failure(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                    quotaEntity("user", "carol"), List.of(new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all());
            check("quotas.bad_key", bad == null ? "none" : bad.getClass().getSimpleName());
        }
    }

    /** Calls of Kafka's tools this broker may not serve: each must fail fast, never hang. */
    static void unsupported(String bootstrap) throws Exception {
        Properties p = Checks.admin(bootstrap);
        try (Admin admin = Admin.create(p)) {
            // Served; without an authorizer Kafka answers SECURITY_DISABLED.
            Throwable acls = failure(admin.describeAcls(AclBindingFilter.ANY).values());
            check("acls.describe", acls == null ? "none" : acls.getClass().getSimpleName());
            served("listPartitionReassignments", () -> get(admin.listPartitionReassignments().reassignments()), v -> { });
            served("electLeaders", () -> get(admin.electLeaders(ElectionType.PREFERRED, null).partitions()), v -> { });
            served("describeDelegationToken", () -> get(admin.describeDelegationToken().delegationTokens()), v -> { });
            served("listShareGroups", () -> get(admin.listGroups(ListGroupsOptions.forShareGroups()).all()), v -> { });
            // Still answered by the same connection after all of them.
            equal(1, get(admin.describeCluster().nodes()).size(), "describeCluster after the unsupported calls");
        }
    }
}
