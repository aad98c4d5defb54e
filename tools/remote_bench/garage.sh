# garage.sh BINARY DIR PORT: a one-node Garage (a production S3-compatible store) over DIR,
# its S3 API on 127.0.0.1:PORT, region us-east-1, block compression off (JPEGs do not
# compress), blocks of GARAGE_BLOCK_SIZE (default 1M, Garage's own), a bucket "bench" and the key in GARAGE_KEY_ID / GARAGE_SECRET (exported by the
# caller as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). Leaves the server running; its pid in
# DIR/garage.pid. GARAGE_PIN: a command the server is started under (taskset -c ...).
set -eu
BIN=$1 DIR=$2 PORT=$3
mkdir -p "$DIR/meta" "$DIR/data"
cat > "$DIR/garage.toml" <<CONF
metadata_dir = "$DIR/meta"
data_dir = "$DIR/data"
db_engine = "lmdb"
replication_factor = 1
compression_level = "none"
block_size = "${GARAGE_BLOCK_SIZE:-1M}"
rpc_bind_addr = "127.0.0.1:$((PORT + 1))"
rpc_public_addr = "127.0.0.1:$((PORT + 1))"
rpc_secret = "$(printf '%064d' 7)"
[s3_api]
s3_region = "us-east-1"
api_bind_addr = "127.0.0.1:$PORT"
root_domain = ".s3.localhost"
[admin]
api_bind_addr = "127.0.0.1:$((PORT + 3))"
CONF
G="$BIN -c $DIR/garage.toml"
${GARAGE_PIN:-} $G server > "$DIR/garage.log" 2>&1 &
echo $! > "$DIR/garage.pid"
for _ in $(seq 100); do $G status > /dev/null 2>&1 && break; sleep 0.1; done
NODE=$($G node id -q | cut -d@ -f1)
$G layout assign -z local -c 100G "$NODE" > /dev/null
$G layout apply --version 1 > /dev/null
$G key import --yes -n bench "$GARAGE_KEY_ID" "$GARAGE_SECRET" > /dev/null
$G bucket create bench > /dev/null
$G bucket allow --read --write bench --key bench > /dev/null
