import type { QueueOperation } from '../common';
import { description } from './description';
import { execute } from './execute';

export const failOperation: QueueOperation = { description, execute };
