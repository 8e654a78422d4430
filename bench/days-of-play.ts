/**
 * A deterministic game-server volume and the days of play that change it, for benchmarking
 * backups that run day after day (bench/snapshot-vs-restic.sh).
 *
 *   node --import tsx bench/days-of-play.ts init DIR      a fresh volume in DIR (must be empty)
 *   node --import tsx bench/days-of-play.ts day DIR N     applies day N of play to DIR
 *
 * `init` writes 3,115 files, about 326 MB: about 120 MB of server and plugin logs (text lines
 * with timestamps, player names and chat, from 4 KB to a few MB each), about 200 MB of region
 * files (`world/region/r.X.Z.mca` and the nether's and the end's, 1-8 MiB each, sector-aligned
 * random data with some zero padding, as compressed chunks are) and small files: configs,
 * plugin jars and configs, and the players' data, stats and advancements.
 *
 * `day N` does what a day on a busy server does: rewrites 3 chunks (4-64 KiB at 3 sector-aligned
 * offsets) in place in 10% of the region files, keeping their size; appends from a few KB to
 * about 100 KB to 10% of the logs; adds 20 files (4 new logs and 4 new players' 4 files each) and
 * deletes the 5 oldest dated logs. Only the files it changes get a new mtime. The same day on
 * the same tree writes the same bytes: every choice comes from a PRNG seeded with the day's
 * number, over the tree's files in sorted order. Applying days 1, 2, 3… in turn on an initial
 * tree therefore always gives the same trees.
 *
 * The random bytes are an AES-256-CTR keystream under a key that is the SHA-256 of PRNG draws:
 * as incompressible as chained SHA-256 blocks, but 30 times as fast, so `init` takes seconds.
 */
import { createCipheriv, createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const MB = 1_000_000;
const MiB = 1024 * 1024;
const SECTOR = 4096;

/** A small seeded PRNG (sfc32), seeded from a string through SHA-256. */
class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string) {
    const h = createHash('sha256').update(seed).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12);
    for (let i = 0; i < 16; i++) this.next();
  }

  /** A number in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A number spread evenly on a log scale between min and max: many small, a few large. */
  logUniform(min: number, max: number): number {
    return Math.exp(Math.log(min) + this.next() * (Math.log(max) - Math.log(min)));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** `count` distinct items, in the order drawn (a partial Fisher-Yates shuffle). */
  sample<T>(items: readonly T[], count: number): T[] {
    const copy = [...items];
    const n = Math.min(count, copy.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.next() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
    }
    return copy.slice(0, n);
  }

  hex(length: number): string {
    let out = '';
    while (out.length < length)
      out += Math.floor(this.next() * 2 ** 32)
        .toString(16)
        .padStart(8, '0');
    return out.slice(0, length);
  }

  /** Incompressible bytes, different for every call. */
  noise(size: number): Buffer {
    const key = createHash('sha256').update(`${this.next()}:${this.next()}:${this.next()}`).digest();
    return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
  }
}

// ---- What the files hold -------------------------------------------------------------------

const NAME_HEADS = (
  'Crafty Dark Swift Iron Lucky Red Shadow Sky Stone Frost Ember Moss Silent Golden ' +
  'Wild Blue Night Pixel Rusty Tiny'
).split(' ');
const NAME_TAILS = (
  'Fox Miner Wolf Builder Creeper Knight Dragon Bee Golem Archer Panda Slime Raven ' +
  'Otter Smith Wizard Llama Axolotl'
).split(' ');
const WORDS = (
  'anyone want to trade diamonds for emeralds lol gg where is the nether portal ' +
  'base spawn come here help creeper blew up my house thanks brb afk back ok nice build ' +
  'farm iron village raid tonight who has elytra need food pls wait for me at the end city ' +
  'server lag again restart soon haha yes no maybe later tomorrow'
).split(' ');
const BLOCKS = (
  'stone dirt oak_log spruce_log cobblestone deepslate iron_ore coal_ore ' +
  'diamond_ore gravel sand netherrack andesite granite diorite birch_log copper_ore ' +
  'gold_ore redstone_ore lapis_ore obsidian glass'
).split(' ');
const ITEMS = (
  'bread cooked_beef torch iron_pickaxe diamond_sword bow arrow shield ender_pearl ' +
  'oak_planks crafting_table furnace chest bucket'
).split(' ');
const ADVANCEMENTS = (
  'story/root story/mine_stone story/upgrade_tools story/smelt_iron ' +
  'story/obtain_armor story/lava_bucket story/iron_tools story/deflect_arrow ' +
  'story/form_obsidian story/mine_diamond story/enter_the_nether story/shiny_gear ' +
  'story/enchant_item story/cure_zombie_villager story/follow_ender_eye ' +
  'story/enter_the_end nether/root nether/find_fortress nether/obtain_blaze_rod ' +
  'nether/brew_potion adventure/root adventure/kill_a_mob adventure/trade ' +
  'adventure/sleep_in_bed husbandry/root husbandry/plant_seed ' +
  'husbandry/breed_an_animal husbandry/tame_an_animal'
).split(' ');
const PLUGINS = (
  'EssentialsX LuckPerms WorldEdit WorldGuard Vault CoreProtect Dynmap ' +
  'GriefPrevention Multiverse-Core PlaceholderAPI ViaVersion DiscordSRV'
).split(' ');
const DIMENSIONS = [
  { dir: 'world/region', level: 'world', regions: 30 },
  { dir: 'world_nether/DIM-1/region', level: 'world_nether', regions: 8 },
  { dir: 'world_the_end/DIM1/region', level: 'world_the_end', regions: 6 },
] as const;

/** The number of files `init` writes, and the share of each kind in bytes. */
const TOTAL_FILES = 3115;
const TOTAL_BYTES = 326 * MB;
const LOG_BYTES = 120 * MB;
const DATED_LOGS = 407; // plus latest.log and one log per plugin: 420 logs in all
const FIRST_LOG_DAY = Date.UTC(2026, 0, 1);
const DAY_MS = 86_400_000;
const LOGS_PER_DAY = 3;

function playerName(random: Random): string {
  return `${random.pick(NAME_HEADS)}${random.pick(NAME_TAILS)}${random.int(0, 999)}`;
}

function uuid(random: Random): string {
  const h = random.hex(32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

/** The time of day of `ms` (UTC), hh:mm:ss. */
function clock(ms: number): string {
  const s = Math.floor(ms / 1000) % 86_400;
  return `${pad2(Math.floor(s / 3600))}:${pad2(Math.floor(s / 60) % 60)}:${pad2(s % 60)}`;
}

/** About `size` bytes of server log, whole lines, starting at `startMs` and moving forward. */
function logText(random: Random, players: readonly string[], size: number, startMs: number): string {
  const lines: string[] = [];
  let length = 0;
  let ms = startMs;
  while (length < size) {
    ms += random.int(0, 4000);
    const t = clock(ms);
    const who = random.pick(players);
    const roll = random.next();
    let line: string;
    if (roll < 0.45) {
      const words = Array.from({ length: random.int(1, 12) }, () => random.pick(WORDS)).join(' ');
      line = `[${t}] [Async Chat Thread - #${random.int(0, 9)}/INFO]: <${who}> ${words}`;
    } else if (roll < 0.55) {
      line = `[${t}] [Server thread/INFO]: ${who} joined the game`;
    } else if (roll < 0.6) {
      line =
        `[${t}] [Server thread/INFO]: ${who}[/10.${random.int(0, 255)}.${random.int(0, 255)}.` +
        `${random.int(1, 254)}:${random.int(1024, 65535)}] logged in with entity id ` +
        `${random.int(100, 999_999)} at ([world]${(random.next() * 4000 - 2000).toFixed(1)}, ` +
        `${random.int(-60, 200)}.0, ${(random.next() * 4000 - 2000).toFixed(1)})`;
    } else if (roll < 0.7) {
      line = `[${t}] [Server thread/INFO]: ${who} lost connection: Disconnected`;
    } else if (roll < 0.78) {
      line =
        `[${t}] [Server thread/INFO]: ${who} issued server command: /` +
        `${random.pick(['home', 'spawn', 'tpa', 'msg', 'warp', 'back', 'sethome', 'balance'])}` +
        ` ${random.pick(players)}`;
    } else if (roll < 0.84) {
      line =
        `[${t}] [Server thread/WARN]: Can't keep up! Is the server overloaded? Running ` +
        `${random.int(2000, 9000)}ms or ${random.int(40, 180)} ticks behind`;
    } else if (roll < 0.9) {
      const level = random.pick(DIMENSIONS).level;
      line = `[${t}] [Server thread/INFO]: Saving chunks for level 'ServerLevel[${level}]'/minecraft:${level === 'world' ? 'overworld' : level.slice(6)}`;
    } else if (roll < 0.96) {
      line =
        `[${t}] [Server thread/INFO]: ${who} has made the advancement ` +
        `[${random.pick(ADVANCEMENTS).split('/')[1]?.replace(/_/g, ' ')}]`;
    } else {
      line =
        `[${t}] [Server thread/INFO]: ${who} was slain by ` +
        `${random.pick(['Zombie', 'Skeleton', 'Creeper', 'Spider', 'Enderman', random.pick(players)])}`;
    }
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

/**
 * A region file: an 8 KiB header, then 4 KiB sectors of random data, each ending in a little zero
 * padding (a chunk's compressed data rarely fills its last sector), so it compresses only a little.
 */
function regionBytes(random: Random, size: number, header: boolean): Buffer {
  const data = random.noise(size);
  if (header) data.fill(0, 4096, 8192); // the timestamp table of a region not yet saved
  for (let sector = header ? 2 : 0; sector * SECTOR < size; sector++) {
    const padding = Math.floor(random.next() * random.next() * 1024);
    const end = Math.min((sector + 1) * SECTOR, size);
    data.fill(0, end - padding, end);
  }
  return data;
}

function statsJson(random: Random): string {
  const pick = (names: readonly string[], max: number) =>
    Object.fromEntries(
      random.sample(names, random.int(2, max)).map((n) => [`minecraft:${n}`, random.int(1, 20_000)]),
    );
  return JSON.stringify(
    {
      stats: {
        'minecraft:mined': pick(BLOCKS, BLOCKS.length),
        'minecraft:used': pick(ITEMS, ITEMS.length),
        'minecraft:crafted': pick(ITEMS, 8),
        'minecraft:custom': pick(
          [
            'play_time',
            'walk_one_cm',
            'sprint_one_cm',
            'jump',
            'deaths',
            'mob_kills',
            'damage_dealt',
            'damage_taken',
            'time_since_death',
            'leave_game',
            'sneak_time',
          ],
          11,
        ),
      },
      DataVersion: 3700,
    },
    null,
    2,
  );
}

function advancementsJson(random: Random, dayMs: number): string {
  const done = random.sample(ADVANCEMENTS, random.int(3, ADVANCEMENTS.length));
  const entries = done.map((name) => [
    `minecraft:${name}`,
    {
      criteria: Object.fromEntries(
        Array.from({ length: random.int(1, 4) }, (_, i) => [
          `${name.split('/')[1]}_${i}`,
          `${new Date(dayMs + random.int(0, DAY_MS)).toISOString().replace('T', ' ').slice(0, 19)} +0000`,
        ]),
      ),
      done: true,
    },
  ]);
  return JSON.stringify({ ...Object.fromEntries(entries), DataVersion: 3700 }, null, 2);
}

function userdataYml(random: Random, name: string, id: string): string {
  return [
    `last-account-name: ${name}`,
    `uuid: ${id}`,
    `money: '${random.int(0, 100_000)}.${random.int(0, 99)}'`,
    'homes:',
    ...random
      .sample(['home', 'base', 'farm', 'mine', 'portal'], random.int(1, 3))
      .flatMap((home) => [
        `  ${home}:`,
        `    world: ${random.pick(DIMENSIONS).level}`,
        `    x: ${(random.next() * 8000 - 4000).toFixed(3)}`,
        `    y: ${random.int(-60, 200)}.0`,
        `    z: ${(random.next() * 8000 - 4000).toFixed(3)}`,
      ]),
    `ip-address: 10.${random.int(0, 255)}.${random.int(0, 255)}.${random.int(1, 254)}`,
    'timestamps:',
    `  login: ${1_767_225_600_000 + random.int(0, 90 * DAY_MS)}`,
    `  logout: ${1_767_225_600_000 + random.int(0, 90 * DAY_MS)}`,
    '',
  ].join('\n');
}

function configYml(random: Random, plugin: string, lines: number): string {
  const out = [`# ${plugin} configuration`, `config-version: ${random.int(1, 40)}`];
  for (let i = 0; i < lines; i++) {
    const key = `${random.pick(WORDS)}-${random.pick(['enabled', 'delay', 'limit', 'message', 'radius', 'cooldown'])}`;
    const value = random.pick([
      String(random.next() < 0.5),
      String(random.int(0, 5000)),
      `'&7${Array.from({ length: random.int(2, 8) }, () => random.pick(WORDS)).join(' ')}'`,
    ]);
    out.push(`${'  '.repeat(random.int(0, 2))}${key}: ${value}`);
  }
  return `${out.join('\n')}\n`;
}

// ---- Writing -------------------------------------------------------------------------------

function write(root: string, relative: string, data: Buffer | string): number {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
  return typeof data === 'string' ? Buffer.byteLength(data) : data.length;
}

/** One player's four files; returns the bytes written. */
function writePlayer(root: string, random: Random, name: string, id: string, dayMs: number): number {
  return (
    write(root, `world/playerdata/${id}.dat`, random.noise(random.int(1500, 3200))) +
    write(root, `world/stats/${id}.json`, statsJson(random)) +
    write(root, `world/advancements/${id}.json`, advancementsJson(random, dayMs)) +
    write(root, `plugins/Essentials/userdata/${id}.yml`, userdataYml(random, name, id))
  );
}

function datedLogName(index: number): string {
  const day = new Date(FIRST_LOG_DAY + Math.floor(index / LOGS_PER_DAY) * DAY_MS).toISOString().slice(0, 10);
  return `logs/${day}-${(index % LOGS_PER_DAY) + 1}.log`;
}

function init(root: string): void {
  if (fs.existsSync(root) && fs.readdirSync(root).length > 0) throw new Error(`${root} is not empty`);
  fs.mkdirSync(root, { recursive: true });
  const random = new Random('days-of-play:init');
  let bytes = 0;
  let files = 0;
  const put = (relative: string, data: Buffer | string) => {
    bytes += write(root, relative, data);
    files++;
  };

  // Small files: the server's configs, the plugins, the players.
  const players = Array.from({ length: 650 }, () => ({ name: playerName(random), id: uuid(random) }));
  const names = players.map((p) => p.name);
  put('eula.txt', 'eula=true\n');
  put(
    'server.properties',
    `${Array.from({ length: 60 }, (_, i) => `setting-${i}=${random.int(0, 1000)}`).join('\n')}\nlevel-name=world\nmotd=A bench server\n`,
  );
  for (const file of ['bukkit.yml', 'spigot.yml', 'commands.yml', 'help.yml', 'permissions.yml'])
    put(file, configYml(random, file, random.int(20, 200)));
  put('config/paper-global.yml', configYml(random, 'paper', 300));
  put('config/paper-world-defaults.yml', configYml(random, 'paper', 400));
  put(
    'ops.json',
    JSON.stringify(
      players.slice(0, 5).map((p) => ({ uuid: p.id, name: p.name, level: 4 })),
      null,
      2,
    ),
  );
  put(
    'whitelist.json',
    JSON.stringify(
      players.map((p) => ({ uuid: p.id, name: p.name })),
      null,
      2,
    ),
  );
  put(
    'banned-players.json',
    JSON.stringify(
      players.slice(640).map((p) => ({ uuid: p.id, name: p.name, reason: 'griefing' })),
      null,
      2,
    ),
  );
  put('banned-ips.json', '[]');
  put(
    'usercache.json',
    JSON.stringify(
      players.map((p) => ({ name: p.name, uuid: p.id, expiresOn: '2026-04-01 12:00:00 +0000' })),
    ),
  );
  for (const plugin of PLUGINS) {
    put(`plugins/${plugin}.jar`, random.noise(random.int(20_000, 300_000)));
    put(`plugins/${plugin}/config.yml`, configYml(random, plugin, random.int(30, 300)));
  }
  for (const dim of DIMENSIONS) put(`${dim.level}/level.dat`, random.noise(random.int(1500, 3000)));
  for (const data of ['raids', 'scoreboard', ...Array.from({ length: 8 }, (_, i) => `map_${i}`)])
    put(`world/data/${data}.dat`, random.noise(random.int(200, 9000)));
  for (const player of players) {
    bytes += writePlayer(root, random, player.name, player.id, FIRST_LOG_DAY + random.int(0, 120) * DAY_MS);
    files += 4;
  }

  // Logs: dated logs, latest.log and one per plugin, sizes from 4 KB to a few MB, log-uniform
  // then scaled to LOG_BYTES in all.
  const logNames = [
    ...Array.from({ length: DATED_LOGS }, (_, i) => datedLogName(i)),
    'logs/latest.log',
    ...PLUGINS.map((plugin) => `plugins/${plugin}/logs/${plugin.toLowerCase()}.log`),
  ];
  const weights = logNames.map(() => random.logUniform(4_000, 3_000_000));
  const scale = LOG_BYTES / weights.reduce((a, b) => a + b, 0);
  logNames.forEach((name, i) => {
    const start = FIRST_LOG_DAY + Math.floor(Math.min(i, DATED_LOGS) / LOGS_PER_DAY) * DAY_MS;
    put(name, logText(random, names, Math.round((weights[i] as number) * scale), start));
  });

  // Region files fill the rest up to TOTAL_BYTES and TOTAL_FILES: 1-8 MiB each, whole sectors.
  const regionCount = DIMENSIONS.reduce((n, d) => n + d.regions, 0);
  if (files + regionCount !== TOTAL_FILES)
    throw new Error(`file count ${files + regionCount}, not ${TOTAL_FILES}`);
  const regionWeights = Array.from({ length: regionCount }, () => 1 + random.next() * 7);
  const regionScale = (TOTAL_BYTES - bytes) / MiB / regionWeights.reduce((a, b) => a + b, 0);
  let r = 0;
  for (const dim of DIMENSIONS) {
    const side = Math.ceil(Math.sqrt(dim.regions));
    for (let i = 0; i < dim.regions; i++, r++) {
      const x = (i % side) - Math.floor(side / 2);
      const z = Math.floor(i / side) - Math.floor(side / 2);
      const size =
        Math.max(2, Math.round(((regionWeights[r] as number) * regionScale * MiB) / SECTOR)) * SECTOR;
      put(`${dim.dir}/r.${x}.${z}.mca`, regionBytes(random, size, true));
    }
  }
  console.log(`init: ${files} files, ${bytes} bytes in ${root}`);
}

/** Every file under root, relative, in a fixed order. */
function listFiles(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => fs.statSync(path.join(root, f)).isFile())
    .map((f) => f.split(path.sep).join('/'))
    .sort();
}

function day(root: string, n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new Error('the day must be a whole number from 1');
  const random = new Random(`days-of-play:day:${n}`);
  const files = listFiles(root);
  const regions = files.filter((f) => f.endsWith('.mca'));
  const logs = files.filter((f) => f.endsWith('.log'));
  const cache = JSON.parse(fs.readFileSync(path.join(root, 'usercache.json'), 'utf8')) as { name: string }[];
  const names = cache.map((p) => p.name);
  const dayMs = FIRST_LOG_DAY + (Math.ceil(DATED_LOGS / LOGS_PER_DAY) + n) * DAY_MS;
  let written = 0;

  // 10% of the region files: 3 chunks rewritten in place each, whole sectors, same file size.
  for (const region of random.sample(regions, Math.round(regions.length / 10))) {
    const file = path.join(root, region);
    const size = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r+');
    try {
      for (let spot = 0; spot < 3; spot++) {
        const length = Math.min(random.int(1, 16) * SECTOR, size - 2 * SECTOR);
        const sectors = Math.floor((size - length) / SECTOR) - 2;
        const offset = (2 + random.int(0, Math.max(0, sectors))) * SECTOR;
        written += fs.writeSync(fd, regionBytes(random, length, false), 0, length, offset);
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  // 10% of the logs: a few KB to about 100 KB more each.
  for (const log of random.sample(logs, Math.round(logs.length / 10))) {
    const text = logText(random, names, Math.round(random.logUniform(2_000, 100_000)), dayMs);
    fs.appendFileSync(path.join(root, log), text);
    written += Buffer.byteLength(text);
  }

  // 20 new files: 4 logs of the day, and 4 new players' files.
  for (let i = 0; i < 4; i++) {
    const name = `logs/${new Date(dayMs).toISOString().slice(0, 10)}-${i + 1}.log`;
    written += write(
      root,
      name,
      logText(random, names, Math.round(random.logUniform(10_000, 400_000)), dayMs),
    );
  }
  for (let i = 0; i < 4; i++) written += writePlayer(root, random, playerName(random), uuid(random), dayMs);

  // 5 deleted: the oldest dated logs, as log rotation does.
  const dated = logs.filter((f) => /^logs\/\d{4}-\d\d-\d\d-\d+\.log$/.test(f)).slice(0, 5);
  for (const log of dated) fs.rmSync(path.join(root, log));
  console.log(`day ${n}: ${written} bytes written, ${dated.length} files deleted in ${root}`);
}

const [command, dir, arg] = process.argv.slice(2);
if (command === 'init' && dir) init(dir);
else if (command === 'day' && dir && arg) day(dir, Number(arg));
else {
  console.error('usage: days-of-play.ts init DIR | day DIR N');
  process.exit(2);
}
