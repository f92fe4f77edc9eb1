# What the TAP tests of postgres/tests/t share: a calico server that proves it is one, the
# vector table's random rows, the pgbench scripts of the background load, and amcheck's
# B-tree check. postgres/tests/run.sh copies this file beside the tests.
package CalicoTap;

use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use Test::More;

our @EXPORT = qw(start_calico_node random_vector_sql write_load_scripts start_pgbench
  btree_indexes_checked calico_flavor calico_reads_summary);

# calico_flavor(): what the tests run on, from $CALICO_TAP_FLAVOR: "calico" (the patched
# server, the default) or "ext" (the unmodified server with the calico extension preloaded).
sub calico_flavor
{
	my $flavor = $ENV{CALICO_TAP_FLAVOR} // 'calico';
	die "CALICO_TAP_FLAVOR must be calico or ext, not '$flavor'"
	  unless $flavor eq 'calico' || $flavor eq 'ext';
	return $flavor;
}

# start_calico_node(NAME, CONF, INIT_ARGS...): a new cluster, initialised with INIT_ARGS,
# CONF appended to postgresql.conf, started; one test asserts the server is the calico
# build (a vanilla server has no pg_calico_stats), or on ext that the calico library is
# preloaded (calico_stats() works only then), so that a wrong PATH cannot pass.
sub start_calico_node
{
	my ($name, $conf, @init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(@init);
	$node->append_conf('postgresql.conf', $conf);
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'calico'\n")
	  if calico_flavor() eq 'ext';
	$node->start;
	if (calico_flavor() eq 'ext')
	{
		is($node->safe_psql('postgres', 'CREATE EXTENSION calico; SELECT count(*) FROM calico_stats()'),
			'1', "$name preloads the calico extension (calico_stats works)");
	}
	else
	{
		is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_calico_stats()'),
			'1', "$name is the calico build (pg_calico_stats exists)");
	}
	return $node;
}

# calico_reads_summary(NODE): (how many reads went Calico's way, a line describing the
# counters): optimistic reads validated on calico, hint hits on ext.
sub calico_reads_summary
{
	my ($node) = @_;
	if (calico_flavor() eq 'ext')
	{
		my $s = $node->safe_psql('postgres', 'SELECT hits, misses, stale, prefetch_reads FROM calico_stats()');
		return ((split /\|/, $s)[0], "calico hits|misses|stale|prefetch reads = $s");
	}
	my $s = $node->safe_psql('postgres',
		'SELECT optimistic_ok, optimistic_failed, slots_used FROM pg_calico_stats()');
	return ((split /\|/, $s)[0], "optimistic ok|failed|slots used = $s");
}

# random_vector_sql(DIM): an SQL expression for a random vector(DIM), evaluated once per row
# of a surrounding generate_series(...) g (the reference to g keeps the planner from
# evaluating it once for all rows).
sub random_vector_sql
{
	my ($dim) = @_;
	return "(SELECT array_agg(random()::real) FROM generate_series(1, $dim) WHERE g > 0)::vector";
}

# write_load_scripts(DIR, DIM, FIRST_ID, LAST_ID): pgbench scripts on table vec, returned
# as a hash of paths: insert (5 random rows), delete (a random id in FIRST_ID..LAST_ID) and
# vacuum.
sub write_load_scripts
{
	my ($dir, $dim, $first, $last) = @_;
	my $v = random_vector_sql($dim);
	my %text = (
		insert => "INSERT INTO vec (e) SELECT $v FROM generate_series(1, 5) g;\n",
		delete => "\\set id random($first, $last)\nDELETE FROM vec WHERE id = :id;\n",
		vacuum => "VACUUM vec;\n");
	my %path;
	for my $name (sort keys %text)
	{
		$path{$name} = "$dir/$name.sql";
		open(my $fh, '>', $path{$name}) or die "cannot write $path{$name}: $!";
		print $fh $text{$name};
		close $fh;
	}
	return %path;
}

# start_pgbench(NODE, OUT_REF, ERR_REF, ARGS...): pgbench -n against NODE's postgres
# database in the background, its output into the two scalars; the caller finishes or kills
# the returned harness.
sub start_pgbench
{
	my ($node, $out, $err, @args) = @_;
	return IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, @args, 'postgres' ],
		'>', $out, '2>', $err);
}

# btree_indexes_checked(NODE): bt_index_check with heapallindexed on every permanent B-tree
# index; returns how many. bt_index_check raises an ERROR on the first inconsistency, and
# safe_psql then dies, failing the test.
sub btree_indexes_checked
{
	my ($node) = @_;
	return $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
  SELECT bt_index_check(c.oid, true) FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
  WHERE a.amname = 'btree' AND c.relpersistence = 'p') s});
}

1;
