// The provisioning API behind express-idempotency, wired as its README's "Getting started"
// shows: app.post('*', idempotency()) with the default in-memory data adapter; each route
// checks isHit(req) and calls reportError(req) when it fails ("Report error in processing
// request"). Workers and counters live in $STATE_DIR/state.json, so a restart keeps them. The
// image name chooses the behaviour: fail-always, fail-once-<tag>, slow-<N>ms, hang (see
// ../common/provisioning.py, which the Python apps share).
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');

const stateDir = process.env.STATE_DIR || path.join(__dirname, 'state');
const file = path.join(stateDir, 'state.json');
fs.mkdirSync(stateDir, { recursive: true });
const state = fs.existsSync(file)
  ? JSON.parse(fs.readFileSync(file, 'utf8'))
  : { workers: [], failedOnce: [], stats: { leases: 0, creates: 0, actions: 0, started: 0 } };
const save = () => fs.writeFileSync(file + '.tmp', JSON.stringify(state)) || fs.renameSync(file + '.tmp', file);

const app = express();
app.use(express.json());
app.post('*', idempotency());

function owner(req, res) {
  const auth = req.get('authorization') || '';
  if (!auth.startsWith('Bearer ') || auth.length <= 7) {
    res.status(401).json({ detail: 'send Authorization: Bearer <principal>' });
    return null;
  }
  return auth.slice(7);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

app.post('/v1/workers', async (req, res) => {
  const service = getSharedIdempotencyService();
  if (service.isHit(req)) return;
  const who = owner(req, res);
  if (who === null) return;
  const { image, label = '' } = req.body || {};
  if (typeof image !== 'string' || typeof label !== 'string') {
    return res.status(400).json({ detail: 'image and label must be strings' });
  }
  state.stats.started += 1;
  save();
  const slow = /^slow-(\d{1,5})ms$/.exec(image);
  if (image === 'hang') await sleep(3600 * 1000);
  if (slow) await sleep(Math.min(Number(slow[1]), 60000));
  let fails = image === 'fail-always';
  if (image.startsWith('fail-once-') && !state.failedOnce.includes(image)) {
    state.failedOnce.push(image);
    fails = true;
  }
  if (fails) {
    save();
    service.reportError(req);
    return res.status(500).json({ detail: `image ${image} failed to boot` });
  }
  const worker = { id: 'w_' + crypto.randomBytes(8).toString('hex'), owner: who, image, label, reboots: 0 };
  state.workers.push(worker);
  state.stats.leases += 1;
  state.stats.creates += 1;
  save();
  res.status(201).json(worker);
});

app.get('/v1/workers', (req, res) => {
  const who = owner(req, res);
  if (who === null) return;
  const items = state.workers.filter((w) => w.owner === who && (req.query.label === undefined || w.label === req.query.label));
  res.json({ items });
});

const find = (who, id) => state.workers.find((w) => w.owner === who && w.id === id);

app.get('/v1/workers/:id', (req, res) => {
  const who = owner(req, res);
  if (who === null) return;
  const w = find(who, req.params.id);
  return w ? res.json(w) : res.status(404).json({ detail: 'no such worker' });
});

app.delete('/v1/workers/:id', (req, res) => {
  const who = owner(req, res);
  if (who === null) return;
  const w = find(who, req.params.id);
  if (!w) return res.status(404).json({ detail: 'no such worker' });
  state.workers = state.workers.filter((x) => x !== w);
  state.stats.leases -= 1;
  save();
  res.json({ deleted: w.id });
});

app.post('/v1/workers/:id/reboot', (req, res) => {
  const service = getSharedIdempotencyService();
  if (service.isHit(req)) return;
  const who = owner(req, res);
  if (who === null) return;
  const w = find(who, req.params.id);
  if (!w) {
    service.reportError(req);
    return res.status(404).json({ detail: 'no such worker' });
  }
  w.reboots += 1;
  state.stats.actions += 1;
  save();
  res.json(w);
});

app.get('/_stats', (req, res) => res.json(state.stats));
app.get('/healthz', (req, res) => res.json({ ok: true }));

app.listen(Number(process.env.PORT), '127.0.0.1');
