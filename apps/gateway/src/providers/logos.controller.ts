import { createHash } from 'node:crypto';
import { Controller, Get, Header, Param } from '@nestjs/common';
import { providerKeySchema } from '@switchboard/contracts';
import { z } from 'zod';
import { Public } from '../access/route-access';
import { createZodDto } from 'nestjs-zod';

/** `<provider key>.svg`, as the provider key alone. */
class LogoParamsDto extends createZodDto(
  z.object({
    file: z
      .string()
      .regex(/\.svg$/)
      .transform((file) => file.slice(0, -4))
      .pipe(providerKeySchema),
  }),
) {}

/**
 * `logo_url` of every provider points here. We ship no third-party trademarks, so each logo is a
 * monogram in a colour derived from the provider key: stable, distinct and license-free.
 */
@Controller('images/template-logos')
export class LogosController {
  @Get(':file')
  @Public()
  @Header('Content-Type', 'image/svg+xml')
  @Header('Cache-Control', 'public, max-age=86400')
  logo(@Param() { file: name }: LogoParamsDto): string {
    const hue = createHash('sha256').update(name).digest()[0]! * (360 / 256);
    const letters = name
      .split(/[-_]/)
      .filter(Boolean)
      .slice(0, 2)
      .map((part) => part[0]!.toUpperCase())
      .join('');
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64" role="img" aria-label="${name}">` +
      `<rect width="64" height="64" rx="14" fill="hsl(${Math.round(hue)},55%,42%)"/>` +
      `<text x="32" y="41" font-family="system-ui,sans-serif" font-size="24" font-weight="600" fill="#fff" text-anchor="middle">${letters}</text></svg>`
    );
  }
}
