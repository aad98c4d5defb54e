# The loader on shards from local disk, from nginx over HTTP, over S3 from Garage (a
# production S3-compatible store) and over S3 from nginx (signed S3 requests, path-style,
# answered by a static server: the S3 client's cost without a server's), all on loopback:
# photos-imagenet ×10 (40 shards of 64) and camera4 ×10 (40 shards of 16, and 10 of 64), three
# rounds in turn; then each set from its index over S3 (no shard read to count).
set -u
source .device/on-device.sh
mkdir -p /tmp/bin /tmp/srv
python3 -c "import lzma, shutil, tarfile; shutil.copyfileobj(lzma.open('.device/gpuprep.xz'), open('/tmp/bin/gpuprep', 'wb')); tarfile.open('.device/servers.tar.xz').extractall('/tmp/srv')"
chmod +x /tmp/bin/gpuprep /tmp/srv/nginx /tmp/srv/garage; export PATH=/tmp/bin:$PATH
D=/tmp/data; mkdir -p $D/www $D/ng/tmp
python3 .device/make_shards.py .device/sets/photos-imagenet $D/www/pi 10 64
python3 .device/make_shards.py /tmp/camera4 $D/www/cam 10 16
python3 .device/make_shards.py /tmp/camera4 $D/www/cambig 10 64
du -sh $D/www/pi $D/www/cam $D/www/cambig
P='shard-{000000..000039}.tar'; PB='shard-{000000..000009}.tar'
for set in pi cam; do gpuprep index "$D/www/$set/$P" --out $D/www/$set/index.json; done
gpuprep index "$D/www/cambig/$PB" --out $D/www/cambig/index.json
cat > $D/ng/nginx.conf <<CONF
user root root; daemon off; worker_processes 4; pid $D/ng/nginx.pid; error_log $D/ng/error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; client_body_temp_path $D/ng/tmp/b; proxy_temp_path $D/ng/tmp/p;
fastcgi_temp_path $D/ng/tmp/f; uwsgi_temp_path $D/ng/tmp/u; scgi_temp_path $D/ng/tmp/s;
server { listen 127.0.0.1:8080; root $D/www; } }
CONF
LD_LIBRARY_PATH=/tmp/srv/lib /tmp/srv/nginx -e $D/ng/error.log -p $D/ng -c $D/ng/nginx.conf &
NGINX=$!
export GARAGE_KEY_ID=GK0123456789abcdef01234567 GARAGE_SECRET=$(printf 'ab%.0s' $(seq 32))
bash .device/garage.sh /tmp/srv/garage $D/garage 9000
S3=$(cat $D/garage/garage.pid)
export AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ACCESS_KEY_ID=$GARAGE_KEY_ID AWS_SECRET_ACCESS_KEY=$GARAGE_SECRET AWS_REGION=us-east-1
python3 .device/s3put.py http://127.0.0.1:9000 bench $D/www
nproc; gpuprep --version; /tmp/srv/garage --version 2>&1 | head -1
run() { python3 .device/rusage.py "$1" "$2" gpuprep bench --loader --repeat 6 --batch 64 --resize 224x224 --normalize imagenet --quiet "$3" | tee -a $OUT/remote.jsonl; }
# nginx's root holds pi/, cam/ and cambig/: as an S3 endpoint, each is a bucket.
s3nginx() { (export AWS_ENDPOINT_URL=http://127.0.0.1:8080; run "$@"); }
for round in 1 2 3; do
  for set in pi cam; do
    run "$set local r$round" "" "$D/www/$set/$P"
    run "$set http r$round" "$NGINX" "http://127.0.0.1:8080/$set/$P"
    run "$set s3 r$round" "$S3" "s3://bench/$set/$P"
    s3nginx "$set s3-nginx r$round" "$NGINX" "s3://$set/$P"
  done
  # Shards four times larger (64 camera photos, ~50 MB each): memory must not follow.
  run "cambig local r$round" "" "$D/www/cambig/$PB"
  run "cambig http r$round" "$NGINX" "http://127.0.0.1:8080/cambig/$PB"
  run "cambig s3 r$round" "$S3" "s3://bench/cambig/$PB"
  s3nginx "cambig s3-nginx r$round" "$NGINX" "s3://cambig/$PB"
done
for set in pi cam cambig; do run "$set s3-index" "$S3" "s3://bench/$set/index.json"; done
kill $NGINX $S3
