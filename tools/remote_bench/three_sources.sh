# The loader on shards from local disk, from nginx over HTTP and from s3s-fs over S3, all on
# loopback: photos-imagenet ×10 (40 shards of 64) and camera4 ×10 (40 shards of 16).
set -u
source .device/on-device.sh
mkdir -p /tmp/bin /tmp/srv
python3 -c "import lzma, shutil, tarfile; shutil.copyfileobj(lzma.open('.device/gpuprep.xz'), open('/tmp/bin/gpuprep', 'wb')); tarfile.open('.device/servers.tar.xz').extractall('/tmp/srv')"
chmod +x /tmp/bin/gpuprep /tmp/srv/nginx /tmp/srv/s3s-fs; export PATH=/tmp/bin:$PATH
D=/tmp/data; mkdir -p $D/www $D/s3 $D/ng/tmp
python3 .device/make_shards.py .device/sets/photos-imagenet $D/www/pi 10 64
python3 .device/make_shards.py /tmp/camera4 $D/www/cam 10 16
python3 .device/make_shards.py /tmp/camera4 $D/www/cambig 10 64
du -sh $D/www/pi $D/www/cam $D/www/cambig
cat > $D/ng/nginx.conf <<CONF
user root root; daemon off; worker_processes 4; pid $D/ng/nginx.pid; error_log $D/ng/error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; client_body_temp_path $D/ng/tmp/b; proxy_temp_path $D/ng/tmp/p;
fastcgi_temp_path $D/ng/tmp/f; uwsgi_temp_path $D/ng/tmp/u; scgi_temp_path $D/ng/tmp/s;
server { listen 127.0.0.1:8080; root $D/www; } }
CONF
LD_LIBRARY_PATH=/tmp/srv/lib /tmp/srv/nginx -e $D/ng/error.log -p $D/ng -c $D/ng/nginx.conf &
NGINX=$!
/tmp/srv/s3s-fs --host 127.0.0.1 --port 9000 --access-key ak --secret-key sksksksk $D/s3 > /dev/null 2>&1 &
S3=$!
export AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ACCESS_KEY_ID=ak AWS_SECRET_ACCESS_KEY=sksksksk AWS_REGION=us-east-1
sleep 2
python3 .device/s3put.py http://127.0.0.1:9000 bench $D/www
nproc; gpuprep --version
run() { python3 .device/rusage.py "$1" "$2" gpuprep bench --loader --repeat 6 --batch 64 --resize 224x224 --normalize imagenet --quiet "$3" | tee -a $OUT/remote.jsonl; }
P='shard-{000000..000039}.tar'
for round in 1 2; do
  for set in pi cam; do
    run "$set local r$round" "" "$D/www/$set/$P"
    run "$set http r$round" "$NGINX" "http://127.0.0.1:8080/$set/$P"
    run "$set s3 r$round" "$S3" "s3://bench/$set/$P"
  done
  # Shards four times larger (64 camera photos, ~50 MB each): memory must not follow.
  run "cambig local r$round" "" "$D/www/cambig/shard-{000000..000009}.tar"
  run "cambig http r$round" "$NGINX" "http://127.0.0.1:8080/cambig/shard-{000000..000009}.tar"
  run "cambig s3 r$round" "$S3" "s3://bench/cambig/shard-{000000..000009}.tar"
done
kill $NGINX $S3
