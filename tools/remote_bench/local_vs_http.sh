# Local disk against nginx over HTTP, interleaved, three rounds of 10 epochs: camera4 ×10 in
# shards of 16 photos (~13 MB) and of 64 (~52 MB).
set -u
source .device/on-device.sh
mkdir -p /tmp/bin /tmp/srv
python3 -c "import lzma, shutil, tarfile; shutil.copyfileobj(lzma.open('.device/gpuprep.xz'), open('/tmp/bin/gpuprep', 'wb')); tarfile.open('.device/servers.tar.xz').extractall('/tmp/srv')"
chmod +x /tmp/bin/gpuprep /tmp/srv/nginx /tmp/srv/s3s-fs; export PATH=/tmp/bin:$PATH
D=/tmp/data; mkdir -p $D/www $D/ng/tmp
[ -d $D/www/cam ] || python3 .device/make_shards.py /tmp/camera4 $D/www/cam 10 16
[ -d $D/www/cambig ] || python3 .device/make_shards.py /tmp/camera4 $D/www/cambig 10 64
[ -d $D/www/pi ] || python3 .device/make_shards.py .device/sets/photos-imagenet $D/www/pi 10 64
cat > $D/ng/nginx.conf <<CONF
user root root; daemon off; worker_processes 4; pid $D/ng/nginx.pid; error_log $D/ng/error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; client_body_temp_path $D/ng/tmp/b; proxy_temp_path $D/ng/tmp/p;
fastcgi_temp_path $D/ng/tmp/f; uwsgi_temp_path $D/ng/tmp/u; scgi_temp_path $D/ng/tmp/s;
server { listen 127.0.0.1:8080; root $D/www; } }
CONF
LD_LIBRARY_PATH=/tmp/srv/lib /tmp/srv/nginx -e $D/ng/error.log -p $D/ng -c $D/ng/nginx.conf &
NGINX=$!
sleep 1
run() { python3 .device/rusage.py "$1" "$2" gpuprep bench --loader --repeat 10 --batch 64 --resize 224x224 --normalize imagenet --quiet "$3" | tee -a $OUT/remote2.jsonl; }
for round in 1 2 3; do
  run "pi local r$round" "" "$D/www/pi/shard-{000000..000039}.tar"
  run "pi http r$round" "$NGINX" "http://127.0.0.1:8080/pi/shard-{000000..000039}.tar"
  run "cam local r$round" "" "$D/www/cam/shard-{000000..000039}.tar"
  run "cam http r$round" "$NGINX" "http://127.0.0.1:8080/cam/shard-{000000..000039}.tar"
  run "cambig local r$round" "" "$D/www/cambig/shard-{000000..000009}.tar"
  run "cambig http r$round" "$NGINX" "http://127.0.0.1:8080/cambig/shard-{000000..000009}.tar"
done
kill $NGINX
