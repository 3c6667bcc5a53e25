/**
 * Charts drawn on the server as inline SVG (docs/project-pages.md): no script, so they show
 * without JavaScript and under the pages' Content-Security-Policy, and nothing is fetched.
 * One component for every page: bars, stacked bars or lines over any sequence of points (days,
 * executions), each with a text alternative (the SVG's <title> and <desc>, a <title> per point
 * that browsers show on hover and screen readers read) and the same figures as a table under a
 * <details> disclosure. Colours come from the stylesheet (`tone-…` classes), not from attributes.
 */
import type { FC } from "hono/jsx";

type ChartTone = "pass" | "fail" | "error" | "accent" | "warn" | "muted";
type ChartSeries = { label: string; tone: ChartTone; values: readonly (number | null)[] };
type ChartKind = "bars" | "stacked" | "lines";

export type ChartProps = {
  /** Unique on the page: the base of the SVG's element ids. */
  id: string;
  title: string;
  /** One or two sentences a screen reader reads instead of the picture. */
  summary: string;
  kind: ChartKind;
  /** The points' names, in order (a day, a run number). */
  labels: readonly string[];
  /** The heading of the labels' column in the table. */
  labelHeading: string;
  series: readonly ChartSeries[];
  /** How a value reads (axis, hover titles, table); plain numbers by default. */
  format?: (value: number) => string;
  /** A link for each point (an execution's run), or none. */
  links?: readonly (string | null)[];
  /**
   * What the figure says instead of an empty plot when no point has a value above 0 (no runs, no
   * flaky test): axes scaled to nothing read "0 ms / 1 ms / 1 ms" or "0.50 runs".
   */
  empty: string;
};

const WIDTH = 720;
const HEIGHT = 200;
/** Room for the longest axis label ("1 min 20 s") at the axis' font size. */
const LEFT = 76;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 24;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

/** The smallest 1, 2 or 5 × 10^k at or above `value` (at least 1), so the axis reads round numbers. */
function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const plain = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(2));
const round = (value: number) => Math.round(value * 10) / 10;

/** Where values and points go on the plot: the axis' top, each point's slot and centre, a bar's width. */
type Scale = { top: number; slot: number; barWidth: number; y: (value: number) => number; xCenter: (i: number) => number };

function scaleOf(kind: ChartKind, labels: readonly string[], series: readonly ChartSeries[]): Scale {
  const count = labels.length;
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const highest = kind === "stacked" ? Math.max(0, ...totals) : Math.max(0, ...series.flatMap((s) => s.values.map((v) => v ?? 0)));
  const top = niceCeiling(highest);
  const slot = count === 0 ? PLOT_W : PLOT_W / count;
  return {
    top,
    slot,
    barWidth: round(Math.max(1, slot * (kind === "bars" ? 0.8 / Math.max(1, series.length) : 0.7))),
    y: (value: number) => round(TOP + PLOT_H - (value / top) * PLOT_H),
    xCenter: (i: number) => round(LEFT + slot * i + slot / 2),
  };
}

/** The shapes of point `i`: its stacked bar's pieces, its bars side by side, or its lines' dots. */
function pointShapes(kind: ChartKind, series: readonly ChartSeries[], i: number, scale: Scale) {
  const { barWidth, y, xCenter } = scale;
  if (kind === "stacked") {
    let base = 0;
    return series.map((s) => {
      const value = s.values[i] ?? 0;
      const from = base;
      base += value;
      return value > 0 ? (
        <rect
          class={`tone-${s.tone}`}
          x={round(xCenter(i) - barWidth / 2)}
          y={y(base)}
          width={barWidth}
          height={round(y(from) - y(base))}
        />
      ) : null;
    });
  }
  if (kind === "bars") {
    return series.map((s, k) => {
      const value = s.values[i];
      if (value === null || value === undefined || value <= 0) return null;
      const x = round(xCenter(i) - (barWidth * series.length) / 2 + barWidth * k);
      return <rect class={`tone-${s.tone}`} x={x} y={y(value)} width={barWidth} height={round(y(0) - y(value))} />;
    });
  }
  return series.map((s) => {
    const value = s.values[i];
    return value === null || value === undefined ? null : <circle class={`tone-${s.tone}`} cx={xCenter(i)} cy={y(value)} r={2.5} />;
  });
}

/** Lines: one path per series, broken where a point has no value. */
function linePaths(series: readonly ChartSeries[], scale: Scale) {
  const { y, xCenter } = scale;
  return series.map((s) => {
    let d = "";
    let pen = false;
    s.values.forEach((value, i) => {
      if (value === null || value === undefined) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${xCenter(i)} ${y(value)} `;
      pen = true;
    });
    return d === "" ? null : <path class={`chart-line tone-${s.tone}`} d={d.trim()} />;
  });
}

/**
 * The axis' ticks: 0, the middle and the top, without a middle that reads like a neighbour
 * ("1 ms" at 0.5 ms under "1 ms") or that is a fraction of counts ("0.50" runs).
 */
function ticksOf(top: number, series: readonly ChartSeries[], format: (value: number) => string): number[] {
  const counts = series.every((s) => s.values.every((v) => v === null || v === undefined || Number.isInteger(v)));
  const middle = top / 2;
  const keepMiddle = !(counts && !Number.isInteger(middle)) && format(middle) !== format(top) && format(middle) !== format(0);
  return keepMiddle ? [0, middle, top] : [0, top];
}

/** Whether any point has a value above 0: otherwise the chart is its empty state. */
const hasData = (series: readonly ChartSeries[]) => series.some((s) => s.values.some((v) => v !== null && v !== undefined && v > 0));

export const Chart: FC<ChartProps> = ({ id, title, summary, kind, labels, labelHeading, series, format = plain, links, empty }) => {
  if (!hasData(series))
    return (
      <figure class="chart chart-empty" aria-labelledby={`${id}-caption`}>
        <figcaption id={`${id}-caption`}>{title}</figcaption>
        <p class="muted">{empty}</p>
      </figure>
    );
  const count = labels.length;
  const scale = scaleOf(kind, labels, series);
  const { top, slot, y } = scale;
  const pointTitle = (i: number) =>
    `${labels[i]}: ${series.map((s) => `${s.label} ${s.values[i] === null || s.values[i] === undefined ? "none" : format(s.values[i]!)}`).join(", ")}`;

  const points = labels.map((_, i) => {
    const shapes = pointShapes(kind, series, i, scale);
    // A transparent slot over the whole height carries the point's title (hover) and its link.
    const hit = <rect class="chart-hit" x={round(LEFT + slot * i)} y={TOP} width={round(slot)} height={PLOT_H} />;
    const link = links?.[i];
    return (
      <g>
        <title>{pointTitle(i)}</title>
        {shapes}
        {link ? <a href={link}>{hit}</a> : hit}
      </g>
    );
  });
  const lines = kind === "lines" ? linePaths(series, scale) : null;

  const ticks = ticksOf(top, series, format);
  return (
    <figure class="chart" aria-labelledby={`${id}-caption`}>
      <figcaption id={`${id}-caption`}>{title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${id}-title ${id}-desc`} preserveAspectRatio="xMidYMid meet">
        <title id={`${id}-title`}>{title}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        {ticks.map((tick) => (
          <g class="chart-axis">
            <line x1={LEFT} x2={WIDTH - RIGHT} y1={y(tick)} y2={y(tick)} />
            <text x={LEFT - 6} y={y(tick) + 4} text-anchor="end">
              {format(tick)}
            </text>
          </g>
        ))}
        {count > 0 ? (
          <g class="chart-axis">
            <text x={LEFT} y={HEIGHT - 6} text-anchor="start">
              {labels[0]}
            </text>
            <text x={WIDTH - RIGHT} y={HEIGHT - 6} text-anchor="end">
              {labels[count - 1]}
            </text>
          </g>
        ) : null}
        {lines}
        {points}
      </svg>
      <ul class="chart-legend">
        {series.map((s) => (
          <li>
            <span class={`swatch tone-${s.tone}`} aria-hidden="true" />
            {s.label}
          </li>
        ))}
      </ul>
      <ChartTable title={title} labels={labels} labelHeading={labelHeading} series={series} format={format} links={links} />
    </figure>
  );
};

/** The chart's figures as a table, under a disclosure. */
const ChartTable: FC<
  Pick<ChartProps, "title" | "labels" | "labelHeading" | "series" | "links"> & { format: (value: number) => string }
> = ({ title, labels, labelHeading, series, format, links }) => (
  <details>
    <summary>Data table: {title}</summary>
    <table>
      <thead>
        <tr>
          <th scope="col">{labelHeading}</th>
          {series.map((s) => (
            <th scope="col" class="num">
              {s.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {labels.map((label, i) => (
          <tr>
            <th scope="row">{links?.[i] ? <a href={links[i]!}>{label}</a> : label}</th>
            {series.map((s) => (
              <td class="num">{s.values[i] === null || s.values[i] === undefined ? "–" : format(s.values[i]!)}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  </details>
);
