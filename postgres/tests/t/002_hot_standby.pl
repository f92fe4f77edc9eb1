# Hot standby on calico (postgres/tests/run.sh tap): a calico primary streams to a calico
# standby while inserts, deletes and VACUUM continue on the primary; the standby answers
# queries during the load (hot standby). Once it has replayed everything, vector queries on
# the standby return what the primary returns: exact kNN and HNSW (a physical replica has
# the same pages, so the same graph). WAL redo on the standby goes through the Calico
# mapping (its buffers are looked up and published like any other), and its searches use
# optimistic reads (pg_calico_stats on the standby counts them). amcheck on the standby too.
# With CALICO_TAP_FLAVOR=ext, both run the unmodified server with the calico extension
# preloaded (the standby inherits it from the primary's configuration in the base backup),
# and the standby's searches must read through calico's hints (calico_stats().hits).
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use CalicoTap;

my $dim = 8;
my $primary = start_calico_node(
	'calico_primary', qq{
shared_buffers = 4MB
autovacuum = off
}, allows_streaming => 1);
my $random_vector = random_vector_sql($dim);
$primary->safe_psql(
	'postgres', qq{
CREATE EXTENSION vector; CREATE EXTENSION amcheck;
SELECT setseed(0.75);
CREATE TABLE vec (id serial PRIMARY KEY, e vector($dim));
INSERT INTO vec (e) SELECT $random_vector FROM generate_series(1, 4000) g;
CREATE INDEX vec_hnsw ON vec USING hnsw (e vector_l2_ops) WITH (m = 8, ef_construction = 32);
CREATE TABLE queries (qid int PRIMARY KEY, e vector($dim));
INSERT INTO queries SELECT g, $random_vector FROM generate_series(1, 40) g;
});

$primary->backup('b1');
my $standby = PostgreSQL::Test::Cluster->new('calico_standby');
$standby->init_from_backup($primary, 'b1', has_streaming => 1);
# Replay waits for the standby's queries instead of cancelling them (VACUUM on the primary
# removes rows they might see).
$standby->append_conf('postgresql.conf', "shared_buffers = 4MB\nmax_standby_streaming_delay = -1\n");
$standby->start;

my %script = write_load_scripts(PostgreSQL::Test::Utils::tempdir, $dim, 1, 4000);

my ($out, $err) = ('', '');
my $bench = start_pgbench(
	$primary, \$out, \$err, '-c', '3', '-j', '3', '-T', '8',
	'-f', "$script{insert}\@6", '-f', "$script{delete}\@2", '-f', "$script{vacuum}\@1");

# Hot standby: the standby answers while it replays.
my $answered = 0;
for (1 .. 10)
{
	my $n = $standby->safe_psql('postgres',
		"SET hnsw.ef_search = 100; SELECT count(*) FROM (SELECT id FROM vec ORDER BY e <-> (SELECT e FROM queries WHERE qid = 1) LIMIT 10) s");
	$answered++ if $n == 10;
	usleep(500_000);
}
is($answered, 10, 'the standby answered HNSW queries while replaying the load');
$bench->finish;
ok($? == 0, 'pgbench on the primary finished') or diag($err);
like($out, qr/number of failed transactions: 0/, 'no failed transaction on the primary');

$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

# enable_seqscan off: on a small table the planner would rather sort than search.
my $q_hnsw_select = q{
SELECT string_agg(qid || ':' || (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM vec ORDER BY e <-> q.e LIMIT 10) n), ';' ORDER BY qid) FROM queries q};
my $q_hnsw = "SET hnsw.ef_search = 100; SET enable_seqscan = off; $q_hnsw_select";
my $q_exact = q{SET enable_indexscan = off;
SELECT string_agg(qid || ':' || (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM vec ORDER BY e <-> q.e, id LIMIT 10) n), ';' ORDER BY qid) FROM queries q};
my $count = q{SELECT count(*), sum(id) FROM vec};

my ($p_count, $s_count) = ($primary->safe_psql('postgres', $count), $standby->safe_psql('postgres', $count));
is($s_count, $p_count, "after catch-up the standby has the primary's rows ($p_count)");
my ($p_exact, $s_exact) = ($primary->safe_psql('postgres', $q_exact), $standby->safe_psql('postgres', $q_exact));
is($s_exact, $p_exact, 'exact kNN: the standby returns what the primary returns (40 queries)');
my ($p_hnsw, $s_hnsw) = ($primary->safe_psql('postgres', $q_hnsw), $standby->safe_psql('postgres', $q_hnsw));
is($s_hnsw, $p_hnsw, 'HNSW kNN: the standby returns what the primary returns (40 queries)');
like(
	$standby->safe_psql('postgres',
		"SET hnsw.ef_search = 100; SET enable_seqscan = off; EXPLAIN (COSTS OFF) $q_hnsw_select"),
	qr/Index Scan using vec_hnsw/,
	'the standby searched with the HNSW index');

# Same answers with the standby's optimistic reads and group prefetch off (the pinned path).
my $knobs_off = calico_flavor() eq 'ext'
  ? 'SET calico.translation = off; SET calico.group_prefetch = off;'
  : 'SET calico_optimistic_reads = off; SET calico_group_prefetch = off;';
my $s_pinned = $standby->safe_psql('postgres', "$knobs_off $q_hnsw");
is($s_pinned, $s_hnsw, 'on the standby, HNSW answers are the same with optimistic reads off');

my $nbtree = btree_indexes_checked($standby);
ok($nbtree > 0, "amcheck on the standby: bt_index_check(heapallindexed) clean on $nbtree btree indexes");
my ($ok, $summary) = calico_reads_summary($standby);
ok($ok > 0, "the standby's searches read pages Calico's way ($summary)");

$standby->stop;
$primary->stop;
done_testing();
