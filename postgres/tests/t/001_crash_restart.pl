# Crash test on calico (postgres/tests/run.sh tap): pgbench (TPC-B-like), HNSW inserts and
# VACUUM run on a small pool (eviction all the time); the postmaster gets SIGKILL at a random
# moment, the clients are killed with it, and the server is started again (crash recovery:
# WAL redo through the Calico mapping). Meanwhile this script inserts rows one at a time and
# records each whose INSERT returned: those are committed. After every restart:
#   - amcheck is clean (bt_index_check with heapallindexed on every btree index,
#     verify_heapam on every table);
#   - every committed row is there, and an exact search (sequential, no index) for its
#     vector finds it first, at distance 0;
#   - HNSW at a high ef_search gives the exact answers on a sample of queries (recall@10
#     at least 0.99 over the sample, and the row itself first for a query that is a row).
# CALICO_CRASH_ROUNDS (default 10) rounds; CALICO_CRASH_SEED replays a failing run's timing.
# With CALICO_TAP_FLAVOR=ext it runs on the unmodified server with the calico extension
# preloaded (run.sh ext), and asserts at the end that searches read through its hints.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib $FindBin::RealBin;
use CalicoTap;

my $rounds = $ENV{CALICO_CRASH_ROUNDS} // 10;
my $seed = $ENV{CALICO_CRASH_SEED} // int(time());
srand($seed);
note "seed $seed (set CALICO_CRASH_SEED=$seed to replay the kill times)";

my $dim = 8;
sub vec_literal
{
	return '[' . join(',', map { sprintf('%.4f', rand()) } 1 .. $dim) . ']';
}

my $node = start_calico_node(
	'calico_crash', qq{
shared_buffers = 2MB
autovacuum = off
max_connections = 30
io_method = worker
});
my $random_vector = random_vector_sql($dim);

$node->safe_psql('postgres',
	'CREATE EXTENSION vector; CREATE EXTENSION amcheck;');
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', '-p', $node->port, '-h', $node->host, 'postgres' ],
	'pgbench -i');
$node->safe_psql(
	'postgres', qq{
SELECT setseed(0.25);
CREATE SEQUENCE vec_bg_id START 1000000;
CREATE TABLE vec (id int PRIMARY KEY DEFAULT nextval('vec_bg_id'), e vector($dim));
INSERT INTO vec (id, e) SELECT g + 500000, $random_vector FROM generate_series(1, 3000) g;
CREATE INDEX vec_hnsw ON vec USING hnsw (e vector_l2_ops) WITH (m = 8, ef_construction = 32);
CREATE TABLE committed (id int PRIMARY KEY, e vector($dim));
});

my %script = write_load_scripts(PostgreSQL::Test::Utils::tempdir, $dim, 500001, 503000);

# The processes whose parent is $ppid (from /proc: the field after the command's ')').
sub children_of
{
	my ($ppid) = @_;
	my @children;
	opendir(my $d, '/proc') or die "no /proc: $!";
	for my $p (grep { /^\d+$/ } readdir($d))
	{
		open(my $f, '<', "/proc/$p/stat") or next;
		my $st = <$f>;
		close $f;
		next unless defined $st;
		my @fields = split(' ', substr($st, rindex($st, ')') + 2));
		push @children, $p if $fields[1] == $ppid;
	}
	closedir($d);
	return @children;
}

my %committed;    # id => vector literal, for every INSERT that returned
my $next_id = 1;

for my $round (1 .. $rounds)
{
	my ($out, $err) = ('', '');
	my $bench = start_pgbench(
		$node, \$out, \$err, '-c', '4', '-j', '2', '-T', '60', '-b', 'tpcb-like@4',
		'-f', "$script{insert}\@3", '-f', "$script{delete}\@1", '-f', "$script{vacuum}\@1");

	# Our own inserts, one at a time, until the kill.
	my $kill_at = time() + 0.5 + rand(2.5);
	my $mine = 0;
	while (time() < $kill_at)
	{
		my $v = vec_literal();
		my $ret = $node->psql('postgres', "INSERT INTO vec (id, e) VALUES ($next_id, '$v')");
		if ($ret == 0)
		{
			$committed{$next_id} = $v;
			$mine++;
		}
		$next_id++;
	}
	my @children = children_of($node->{_pid});
	$node->kill9;
	$bench->kill_kill;

	# Orphaned backends exit when their clients are gone (and the I/O workers, checkpointer
	# and the rest when they see the postmaster gone); the old shared memory must be
	# released before a new postmaster may start.
	my $deadline = time() + 60;
	while (time() < $deadline && grep { kill(0, $_) } @children)
	{
		usleep(100_000);
	}
	my @left = grep { kill(0, $_) } @children;
	is(scalar(@left), 0, "round $round: the killed postmaster's " . scalar(@children) . " children all exited");
	my $started = 0;
	for my $try (1 .. 20)
	{
		if ($node->start(fail_ok => 1))
		{
			$started = 1;
			last;
		}
		$node->{_pid} = undef;    # a failed start leaves no server behind
		usleep(500_000);
	}
	ok($started, "round $round: restarted after SIGKILL of the postmaster ($mine inserts of ours committed before it)");
	last unless $started;

	# The committed rows, as this script saw them, into a table for the checks.
	$node->safe_psql('postgres',
		'TRUNCATE committed; INSERT INTO committed VALUES '
		  . join(',', map { "($_, '$committed{$_}')" } sort { $a <=> $b } keys %committed))
	  if %committed;

	my $nbtree = btree_indexes_checked($node);
	ok($nbtree > 0, "round $round: bt_index_check(heapallindexed) clean on $nbtree btree indexes");
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM pg_class c, verify_heapam(c.oid) v
WHERE c.relkind = 'r' AND c.relpersistence = 'p'}),
		'0',
		"round $round: verify_heapam finds nothing");

	is( $node->safe_psql(
			'postgres', q{
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM committed c
WHERE NOT EXISTS (SELECT 1 FROM vec v WHERE v.id = c.id AND v.e = c.e)
   OR (SELECT v.id FROM vec v ORDER BY v.e <-> c.e, v.id LIMIT 1) <> c.id}),
		'0',
		"round $round: all " . scalar(keys %committed) . " committed rows present, each found first by an exact search");

	# enable_seqscan off: on a small table the planner would rather sort than search.
	my $check = $node->safe_psql(
		'postgres', q{
SET hnsw.ef_search = 1000; SET enable_seqscan = off;
WITH q AS (SELECT id, e FROM vec WHERE id % 97 = 0 ORDER BY id LIMIT 30),
h AS (SELECT q.id, array(SELECT v.id FROM vec v ORDER BY v.e <-> q.e LIMIT 10) ids FROM q),
x AS (SELECT q.id, array(SELECT v.id FROM vec v ORDER BY (v.e <-> q.e) + 0, v.id LIMIT 10) ids FROM q)
SELECT count(*), sum(cardinality(array(SELECT unnest(h.ids) INTERSECT SELECT unnest(x.ids)))),
       sum((h.ids[1] = h.id)::int)
FROM h JOIN x USING (id)});
	my ($nq, $hits, $self) = split /\|/, $check;
	note "round $round: HNSW (ef_search 1000) vs exact on $nq queries: $hits of " . (10 * $nq) . " neighbours, itself first in $self";
	ok($nq > 0 && $hits >= 0.99 * 10 * $nq && $self == $nq,
		"round $round: HNSW at high ef_search gives the exact answers on a sample");
	my $plan = $node->safe_psql('postgres',
		q{SET hnsw.ef_search = 1000; SET enable_seqscan = off; EXPLAIN (COSTS OFF)
SELECT q.id, array(SELECT v.id FROM vec v ORDER BY v.e <-> q.e LIMIT 10) FROM vec q WHERE q.id % 97 = 0});
	like($plan, qr/Index Scan using vec_hnsw/, "round $round: that search used the HNSW index");
}

my ($calico_reads, $summary) = calico_reads_summary($node);
note "after the rounds: $summary";
ok($calico_reads > 0, "reads went through Calico after the last restart ($summary)")
  if calico_flavor() eq 'ext';
$node->stop;
done_testing();
