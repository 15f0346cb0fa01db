set -u
cd starter
t0=$SECONDS
make -j16 harness KERNELS=../solution/kernels KTAG=solution > $OUT/build.log 2>&1; echo "build exit $? in $((SECONDS-t0)) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
printf '%s\n' '{"op":"check","task":"fill","dtype":"int32","shape":"2048x2048","seed":1,"nonce":"a"}' \
  '{"op":"check","task":"matmul_tiled","dtype":"float32","shape":"1024x1024x1024","seed":1,"nonce":"b"}' \
  '{"op":"check","task":"dot","dtype":"float32","shape":"16777216","seed":1,"nonce":"c"}' '{"op":"quit"}' \
  | timeout 60 ./build/solution/harness --serve > $OUT/serve.jsonl 2>&1; echo "serve exit $?"
python3 -c "
import json,sys
for line in open('$OUT/serve.jsonl'):
    r=json.loads(line); print(r.get('op'), r.get('task'), r.get('shape_text'), r.get('status'), r.get('context_lost'), (r.get('message') or '')[:80])"
